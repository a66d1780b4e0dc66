"""The tuner end to end on CartPole with a tiny budget: real trials, the table, and a command that parses.

Serial mode keeps a trial's start-up to one process, so at least the baseline is measured within the budget even on
a busy 2-core machine; the search itself is covered with fake trials in test_tune_tuner.py.
"""

from __future__ import annotations

import os
import re
import shlex

import psutil
from sf_run import REPO_ROOT, run_module

from sf_examples.train_gym_env import parse_gym_args

BUDGET_S = 35


def test_tuner_prints_a_table_and_a_runnable_command_within_its_budget():
    args = ["--train_script=sf_examples.train_gym_env", "--env=CartPole-v1", f"--tune_seconds={BUDGET_S}",
            "--tune_warmup_seconds=1", "--tune_measure_seconds=3", "--device=cpu", "--serial_mode=True",
            "--experiment=must_not_be_created"]  # fmt: skip
    result = run_module("sample_factory.tune", args, timeout=BUDGET_S + 60)
    assert result.returncode == 0, result.explain()
    assert result.seconds < BUDGET_S + 15, result.explain()  # the budget plus start-up and reaping
    lines = result.output.strip().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| # | trial |"))
    baseline = lines[header + 2]
    assert re.match(r"\| 0 \| baseline \| \d+ \| \d+ \| \d+ \| (True|False) \| 1 \| \d+ \| \d+ \| steady \|", baseline)
    assert "| ok |" in baseline, result.explain()

    command = shlex.split(lines[-1])
    assert command[:4] == ["python", "-m", "sf_examples.train_gym_env", "--env=CartPole-v1"], result.explain()
    cfg = parse_gym_args(command[3:])  # the library's own parser takes the recommended command
    assert cfg.serial_mode and cfg.device == "cpu" and cfg.experiment == "must_not_be_created"
    assert "--tune_seconds" not in lines[-1] and "--benchmark" not in lines[-1]

    train_dir = re.search(r"trials in (\S+)", result.output).group(1)
    assert not os.path.exists(train_dir), "the tuner's temporary train_dir was left behind"
    assert not os.path.exists(os.path.join(REPO_ROOT, "train_dir", "must_not_be_created"))
    alive = [p for p in psutil.process_iter(["cmdline"]) if any(train_dir in a for a in p.info["cmdline"] or [])]
    assert not alive, f"trial processes outlived the tuner: {alive}"
