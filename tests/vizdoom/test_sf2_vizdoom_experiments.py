"""Sample Factory 2's VizDoom run descriptions: every command parses with the family's flags, the budget can be
overridden through ``SF_EXPERIMENT_EXTRA_ARGS``, and the launcher runs doom_basic end to end on a tiny budget."""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from pathlib import Path

import pytest
from vizdoom_helpers import run_module

from sample_factory.launcher.run_description import RunDescription
from sf_examples.vizdoom import experiments
from sf_examples.vizdoom.train_vizdoom import parse_vizdoom_cfg

SF2_RUNS = [
    "doom_basic", "doom_battle_battle2_appo", "doom_battle_d4_appo_pbt", "doom_bots_sweep", "doom_defend_center",
    "doom_freedm", "doom_health_gathering", "paper_doom_all_basic_envs", "paper_doom_battle2_appo",
    "paper_doom_battle2_appo_pbt", "paper_doom_battle_appo", "paper_doom_battle_appo_pbt", "paper_doom_bots_pbt",
    "paper_doom_duel_bots_pbt", "paper_doom_duel_pbt", "paper_doom_wall_time", "sf2_doom_battle_envs",
]  # fmt: skip
TRAIN_PREFIX = ["python", "-m", "sf_examples.vizdoom.train_vizdoom"]
TINY = (
    "--train_for_env_steps=600 --num_workers=1 --num_envs_per_worker=2 --batch_size=64 --rollout=16 "
    "--use_rnn=False --device=cpu --serial_mode=True --decorrelate_experience_max_seconds=0"
)


def _load(name: str):
    return importlib.reload(importlib.import_module(f"sf_examples.vizdoom.experiments.{name}"))


@pytest.mark.parametrize("name", SF2_RUNS)
def test_every_command_parses_with_the_family_flags(name: str, tmp_path: Path) -> None:
    description = _load(name).RUN_DESCRIPTION
    assert isinstance(description, RunDescription) and description.run_name == name
    for command in description.generate_experiments(str(tmp_path)):
        argv = shlex.split(command.cmd)
        assert argv[:3] == TRAIN_PREFIX
        cfg = parse_vizdoom_cfg(argv[3:])
        assert cfg.env.startswith("doom_") and cfg.experiment == command.name


def test_paper_flags_are_passed() -> None:
    argv = shlex.split(_load("paper_doom_duel_bots_pbt").RUN_DESCRIPTION.generate_experiments("/t")[0].cmd)[3:]
    cfg = parse_vizdoom_cfg(argv)
    assert (cfg.env, cfg.num_policies, cfg.with_pbt, cfg.reward_scale) == ("doom_duel_bots", 8, True, 0.5)
    assert (cfg.env_frameskip, cfg.gamma, cfg.pbt_replace_reward_gap_absolute) == (2, 0.995, 3.0)


def test_extra_args_override_the_budget(monkeypatch) -> None:
    monkeypatch.setenv(experiments.EXTRA_ARGS_VARIABLE, "--train_for_env_steps=1000 --num_workers=2")
    try:
        command = _load("doom_basic").RUN_DESCRIPTION.generate_experiments("/t")[0].cmd
        cfg = parse_vizdoom_cfg(shlex.split(command)[3:])
        assert (cfg.train_for_env_steps, cfg.num_workers, cfg.batch_size) == (1000, 2, 2048)
    finally:
        monkeypatch.delenv(experiments.EXTRA_ARGS_VARIABLE)
        _load("doom_basic")


def test_launcher_runs_doom_basic_on_a_tiny_budget(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(experiments.EXTRA_ARGS_VARIABLE, TINY)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    result = run_module(
        "sample_factory.launcher.run", "--run=sf_examples.vizdoom.experiments.doom_basic", "--backend=processes",
        "--max_parallel=2", "--num_gpus=0", "--pause_between=0", f"--train_dir={tmp_path}", timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.output[-3000:]
    runs = sorted(p.name for p in (tmp_path / "doom_basic").iterdir() if p.name[:2].isdigit())
    assert runs == ["00_basic_seed_0", "01_basic_seed_1111", "02_basic_seed_2222", "03_basic_seed_3333"]
    for run in runs:
        checkpoints = list((tmp_path / "doom_basic" / run).rglob("checkpoint_*.pth"))
        assert checkpoints, f"{run} saved no checkpoint:\n{result.output[-3000:]}"
