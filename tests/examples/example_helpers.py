"""Helpers of the end-to-end example tests: run ``python -m <module>`` in its own session, check it cleaned up.

Each command runs with ``start_new_session=True``, so the command and every process it spawns share one process
group. When the command has exited, that group must be empty: a worker, learner or resource tracker that
outlives its runner is a leak. Stragglers are killed before the test fails, so a failing test never leaves
processes behind for the next one.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT_S = 150
# Children exit a moment after the main process (queue feeder threads, the multiprocessing resource tracker).
GROUP_EXIT_GRACE_S = 10.0
_COLLECTED_RE = re.compile(r"Collected \{([^}]*)\}")


@dataclass
class CommandResult:
    returncode: int
    output: str  # stdout and stderr interleaved, as a user would see them

    def collected(self) -> dict[int, int]:
        """Samples per policy from the final ``Collected {0: N, ...}`` line; {} when the line is missing."""
        matches = _COLLECTED_RE.findall(self.output)
        if not matches:
            return {}
        pairs = (item.split(":") for item in matches[-1].split(",") if item.strip())
        return {int(policy): int(samples) for policy, samples in pairs}

    def explain(self) -> str:
        return f"exit code {self.returncode}, last output:\n{self.output[-4000:]}"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _reap_group(pgid: int) -> bool:
    """Wait for the group to empty; kill whatever remains. Returns True if processes had to be killed."""
    deadline = time.monotonic() + GROUP_EXIT_GRACE_S
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return False
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def run_module(module: str, *args: str, timeout: float = COMMAND_TIMEOUT_S) -> CommandResult:
    """Run ``python -m module args`` from the repository root; fail the test if any process of it is left over."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    pgid = proc.pid  # a new session leader's process group id is its pid
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(pgid, signal.SIGKILL)
        output, _ = proc.communicate()
        _reap_group(pgid)
        pytest.fail(f"python -m {module} did not finish in {timeout}s:\n{output[-4000:]}")
    leaked = _reap_group(pgid)
    assert not leaked, f"python -m {module} left processes running after it exited (killed them):\n{output[-4000:]}"
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    return CommandResult(proc.returncode, output)


def assert_trained(result: CommandResult, policies: tuple[int, ...] = (0,)) -> dict[int, int]:
    """Exit code 0 and a ``Collected`` line with a positive sample count for each of ``policies``."""
    assert result.returncode == 0, result.explain()
    collected = result.collected()
    for policy in policies:
        assert collected.get(policy, 0) > 0, f"policy {policy} collected nothing: {collected}\n{result.explain()}"
    return collected


def train_args(train_dir: Path, experiment: str, *extra: str, steps: int = 4000) -> list[str]:
    """Flags shared by every short training run of these tests."""
    return [
        f"--train_dir={train_dir}",
        f"--experiment={experiment}",
        f"--train_for_env_steps={steps}",
        "--device=cpu",
        "--decorrelate_experience_max_seconds=0",
        *extra,
    ]
