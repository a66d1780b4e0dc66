"""Run ``python -m <module>`` in its own session and check that no ViZDoom engine or shared memory outlives it.

ViZDoom engines are children of the env's process and share its process group, so an empty group after the run
means no engine survived; ``/dev/shm/ViZDoom*`` segments are compared before and after (only ViZDoom's: other
people's runs on a shared machine create and remove their own segments meanwhile).
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

REPO_ROOT = Path(__file__).resolve().parents[2]
GROUP_EXIT_GRACE_S = 10.0
_COLLECTED_RE = re.compile(r"Collected \{([^}]*)\}")
_REWARD_RE = re.compile(r"Avg episode reward: \[\(0, '(-?[0-9.naif]+)'\)")


@dataclass
class RunResult:
    returncode: int
    output: str
    seconds: float

    def collected(self) -> dict[int, int]:
        """Samples per policy from the last ``Collected {...}`` line; {} when missing."""
        matches = _COLLECTED_RE.findall(self.output)
        if not matches:
            return {}
        pairs = (item.split(":") for item in matches[-1].split(",") if item.strip())
        return {int(policy): int(samples) for policy, samples in pairs}

    def last_reward(self) -> float | None:
        found = _REWARD_RE.findall(self.output)
        return float(found[-1]) if found else None

    def explain(self) -> str:
        return f"exit code {self.returncode} after {self.seconds:.1f}s, last output:\n{self.output[-4000:]}"


def vizdoom_shm() -> set[str]:
    return {entry for entry in os.listdir("/dev/shm") if entry.startswith("ViZDoom")}


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _reap_group(pgid: int) -> bool:
    """Wait for the session's group to empty; kill what remains. True when something had to be killed."""
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


def run_module(module: str, *args: str, timeout: float = 240.0) -> RunResult:
    """Run the module from the repository root; assert nothing of it (process or ViZDoom segment) is left."""
    return run_python("-m", module, *args, timeout=timeout)


def run_python(*args: str, timeout: float = 240.0) -> RunResult:
    """``python args`` in a new session, with the checks of ``run_module``."""
    shm_before = vizdoom_shm()
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        _reap_group(proc.pid)
        raise AssertionError(f"python {' '.join(args)} did not finish in {timeout}s:\n{output[-4000:]}") from None
    result = RunResult(proc.returncode, output, time.monotonic() - started)
    assert not _reap_group(proc.pid), f"processes (ViZDoom engines?) outlived the run:\n{result.explain()}"
    leaked = vizdoom_shm() - shm_before
    assert not leaked, f"ViZDoom shared memory left behind: {sorted(leaked)}\n{result.explain()}"
    return result


def train_args(train_dir: Path, experiment: str, *extra: str, steps: int = 4000) -> list[str]:
    """Flags of every short training run of these tests."""
    return [
        f"--train_dir={train_dir}",
        f"--experiment={experiment}",
        f"--train_for_env_steps={steps}",
        "--device=cpu",
        "--decorrelate_experience_max_seconds=0",
        "--batch_size=512",
        "--rollout=16",
        *extra,
    ]
