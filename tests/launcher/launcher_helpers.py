"""Shared pieces of the launcher tests: run modules written with the public API only, and launcher runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import psutil

LAUNCHER = "sample_factory.launcher.run"
# a CartPole run of a few seconds: serial mode starts fastest; 1024 steps are one learner step of 2 x 512
CARTPOLE = (
    f"{shlex.quote(sys.executable)} -m sf_examples.train_gym_env --env=CartPole-v1 --num_workers=1 "
    "--num_envs_per_worker=2 --device=cpu --serial_mode=True"
)
SWEEP_NAMES = [
    "00_cartpole_seed_0_learning_rate_0.0001",
    "01_cartpole_seed_0_learning_rate_0.0003",
    "02_cartpole_seed_1111_learning_rate_0.0001",
    "03_cartpole_seed_1111_learning_rate_0.0003",
]


def write_run_module(folder: Path, run_name: str, experiments_source: str) -> Path:
    """A run module like a user writes one: imports of the public API, then RUN_DESCRIPTION."""
    path = folder / f"{run_name}.py"
    path.write_text(
        "from sample_factory.launcher.launcher_utils import seeds\n"
        "from sample_factory.launcher.run_description import Experiment, ParamGrid, ParamList, RunDescription\n\n"
        f"RUN_DESCRIPTION = RunDescription({run_name!r}, experiments=[{experiments_source}])\n"
    )
    return path


def sweep_module(folder: Path, steps: int = 1024) -> Path:
    """The acceptance sweep: 2 seeds x 2 learning rates over a short CartPole command."""
    grid = 'ParamGrid([("seed", seeds(2)), ("learning_rate", [0.0001, 0.0003])])'
    return write_run_module(
        folder, "sweep", f'Experiment("cartpole", {CARTPOLE + f" --train_for_env_steps={steps}"!r}, {grid})'
    )


def python_cmd(code: str) -> str:
    """A command running a snippet of Python (the launcher appends --experiment/--train_dir; sys.argv takes them)."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def table_rows(output: str) -> dict[str, list[str]]:
    """Rows of the last table the launcher printed (its final status table), by experiment name."""
    lines = output.splitlines()
    headers = [
        i for i, line in enumerate(lines[:-1]) if line.startswith("experiment ") and lines[i + 1].startswith("---")
    ]
    assert headers, f"no table in the launcher's output:\n{output[-3000:]}"
    rows = {}
    for line in lines[headers[-1] + 2 :]:
        cells = line.split()
        if not cells or not re.match(r"^\d\d_", cells[0]) or cells[0] in rows:
            break
        rows[cells[0]] = cells
    return rows


def processes_with(text: str) -> list[psutil.Process]:
    """Live processes whose command line mentions ``text`` (a test's private train_dir)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and text in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def wait_for(condition, timeout: float, what: str, poll: float = 0.2):
    """Poll ``condition()`` until it returns something truthy; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def launcher_env(**extra: str) -> dict[str, str]:
    """The environment of a launcher run: this checkout first on the path, so jobs import the code under test."""
    repo = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **extra}


def run_launcher(args: list[str], env: dict[str, str] | None = None, timeout: float = 120.0):
    """``python -m sample_factory.launcher.run args`` to completion; returns (exit code, stdout + stderr)."""
    result = subprocess.run(
        [sys.executable, "-m", LAUNCHER, *args],
        env=env or launcher_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )
    return result.returncode, result.stdout + result.stderr
