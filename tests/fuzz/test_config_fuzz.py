"""Configuration fuzz: random flag values, wrong types and combinations from ``/work/shared/cli_params.tsv``.

Every case goes through the real two-step parse (:func:`parse_sf_args`, :func:`parse_full_cfg`) and
:func:`validate_cfg`, in this process. It must be accepted, or end in argparse's usage error or a
:class:`ConfigError`, and that message must name one of the flags of the case. Any other exception (a TypeError or
ZeroDivisionError from inside the checks) is a bug of the validation. A few accepted random configs are then
trained for a few hundred CartPole steps in serial mode: they must finish, or fail with a clear error, in bounded
time. Seeds are the test ids (``case_17``), so a failure reproduces with ``pytest -k case_17``.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
from pathlib import Path

import pytest
from config_cases import FlagSpec, config_case, flag_specs, safe_run_case
from sf_run import run_script

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.cfg.cfg import LEGACY_ALIASES
from sample_factory.cfg.validation import ConfigError, validate_cfg

NUM_CASES = 400
NUM_RUNS = 4  # tiny serial runs in the default suite (one process); more behind the slow mark
NUM_SLOW_RUNS = 12
RUN_TIMEOUT_S = 120.0
DRIVER = str(Path(__file__).with_name("fuzz_driver.py"))


def _parse_and_validate(argv: list[str]) -> tuple[str, str]:
    """``("accepted", "")``, ``("usage", stderr)`` or ``("config", message)``; any other exception propagates."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            parser, _ = parse_sf_args(argv)
            cfg = parse_full_cfg(parser, argv)
    except SystemExit as exc:
        assert exc.code == 2, f"argparse exited with {exc.code}, not its usage error"
        return "usage", stderr.getvalue()
    try:
        validate_cfg(cfg)
    except ConfigError as exc:
        return "config", str(exc)
    return "accepted", ""


def _names(spec: FlagSpec) -> list[str]:
    """The spellings an error about this flag may use: its own, and the new name of a legacy alias."""
    dest = spec.flag[2:]
    return [spec.flag] + ([f"--{LEGACY_ALIASES[dest]}"] if dest in LEGACY_ALIASES else [])


@pytest.fixture(scope="module")
def specs() -> list[FlagSpec]:
    return flag_specs()


@pytest.mark.parametrize("seed", range(NUM_CASES), ids=lambda s: f"case_{s}")
def test_random_flags_are_accepted_or_refused_naming_the_flag(seed: int, specs: list[FlagSpec], tmp_path) -> None:
    picked, argv = config_case(random.Random(seed), specs, tmp_path)
    outcome, message = _parse_and_validate(argv)
    if outcome == "accepted":
        return
    named = [name for spec in picked for name in _names(spec) if name in message]
    assert named, f"{outcome} error for {argv} names none of the fuzzed flags:\n{message}"
    assert "Traceback" not in message


def test_the_fuzz_covers_every_flag_and_both_outcomes(specs: list[FlagSpec], tmp_path) -> None:
    """The generator reaches every flag of cli_params.tsv, and both accepted and refused cases occur."""
    tsv_flags = {spec.flag for spec in specs if spec.from_tsv}
    seen, outcomes = set(), set()
    for seed in range(NUM_CASES):
        picked, argv = config_case(random.Random(seed), specs, tmp_path)
        seen.update(spec.flag for spec in picked)
        if seed < 60:
            outcomes.add(_parse_and_validate(argv)[0])
    assert len(tsv_flags) > 100 and tsv_flags <= seen
    assert outcomes == {"accepted", "usage", "config"}


def test_unknown_flag_and_known_bad_values_get_the_expected_messages(tmp_path) -> None:
    base = ["--env=CartPole-v1", f"--train_dir={tmp_path}", "--experiment=e"]
    cases = {
        "--gamma=nan": "--gamma=nan must be a finite number",
        "--gamma=1.5": "--gamma=1.5 is a discount factor",
        "--learning_rate=-1": "--learning_rate=-1.0 must be >= 0",
        "--encoder_mlp_layers=0": "every layer width must be >= 1",
        "--batch_size=abc": "argument --batch_size: invalid int value: 'abc'",
        "--use_rnn=maybe": "'maybe' is not a boolean",
        "--rnn_type=transformer": "argument --rnn_type: invalid choice: 'transformer'",
        "--no_such_flag=1": "unrecognized arguments: --no_such_flag=1",
        "--train_dir=a\x00b": "must not contain a NUL character",
    }
    for flag, expected in cases.items():
        outcome, message = _parse_and_validate([*base, flag])
        assert outcome in ("usage", "config") and expected in message, (flag, message)


def _run_configs(seeds: range, tmp_path) -> None:
    """Train each seed's safe random config in one driver process; each must end with exit status 0."""
    cases = []
    for seed in seeds:
        argv = safe_run_case(random.Random(seed), tmp_path / f"run_{seed}")
        outcome, message = _parse_and_validate(argv)
        assert outcome == "accepted", f"the safe generator made a refused config: {message}"
        cases.append(argv)
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps(cases))
    result = run_script(DRIVER, [str(cases_file)], timeout=RUN_TIMEOUT_S + 30 * len(cases))
    assert result.returncode == 0, result.explain()
    statuses = dict(re.findall(r"^FUZZ_RESULT (\d+) (\S+)$", result.output, flags=re.MULTILINE))
    for index, argv in enumerate(cases):
        assert statuses.get(str(index)) == "0", f"case {index} {argv}\n{result.explain()}"
    assert "Traceback" not in result.output, result.explain()


def test_accepted_random_configs_train_in_serial_mode(tmp_path) -> None:
    _run_configs(range(NUM_RUNS), tmp_path)


@pytest.mark.slow
def test_more_accepted_random_configs_train_in_serial_mode(tmp_path) -> None:
    _run_configs(range(NUM_RUNS, NUM_RUNS + NUM_SLOW_RUNS), tmp_path)
