"""Helpers for end-to-end tests: run a training command in its own session and check it left nothing behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IGNORED_SHM = ("sem.mp", "pym-")


@dataclass
class RunResult:
    returncode: int
    output: str
    seconds: float

    def collected(self) -> dict[int, int]:
        found = re.findall(r"Collected (\{.*\}), FPS", self.output)
        assert found, f"no 'Collected' line in output:\n{self.output[-3000:]}"
        return {int(k): int(v) for k, v in re.findall(r"(\d+): (\d+)", found[-1])}

    def last_reward(self) -> float:
        found = re.findall(r"Avg episode reward: \[\(0, '(-?[0-9.]+)'\)", self.output)
        assert found, "no 'Avg episode reward' line in output"
        return float(found[-1])


def shm_entries() -> set[str]:
    try:
        return {e for e in os.listdir("/dev/shm") if not e.startswith(IGNORED_SHM)}
    except FileNotFoundError:
        return set()


def _assert_group_gone(pgid: int) -> None:
    """Every process of the run's session must be gone; stragglers are killed and reported."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.killpg(pgid, signal.SIGKILL)
    raise AssertionError("processes of the run were still alive after it exited")


def start(cmd: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env=env,
    )


def finish(proc: subprocess.Popen, started: float, timeout: float, shm_before: set[str]) -> RunResult:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"run did not finish in {timeout} s:\n{out[-3000:]}") from exc
    _assert_group_gone(proc.pid)
    leaked = shm_entries() - shm_before
    assert not leaked, f"/dev/shm entries left behind: {sorted(leaked)}"
    return RunResult(proc.returncode, out, time.monotonic() - started)


def run_module(module: str, args: list[str], timeout: float = 180.0) -> RunResult:
    """``python -m module args`` in a new session; asserts no process or /dev/shm entry remains."""
    before = shm_entries()
    started = time.monotonic()
    return finish(start([sys.executable, "-m", module, *args]), started, timeout, before)


def run_script(path: str, args: list[str], timeout: float = 180.0) -> RunResult:
    before = shm_entries()
    started = time.monotonic()
    return finish(start([sys.executable, path, *args]), started, timeout, before)
