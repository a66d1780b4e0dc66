"""Run a command of the project in its own session and check it left nothing behind.

Every end-to-end test goes through here. The command runs with ``start_new_session=True``, so it and every
process it spawns (workers, learners, simulator engines) share one process group; after the command exits that
group must be empty and no new ``/dev/shm`` entry may remain. Stragglers are killed before the test fails, so a
failing test never leaves processes behind for the next one.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IGNORED_SHM = ("sem.mp", "pym-")
# children exit a moment after the main process (queue feeder threads, the multiprocessing resource tracker)
GROUP_EXIT_GRACE_S = 10.0
_COLLECTED_RE = re.compile(r"Collected \{([^}]*)\}")
_REWARD_RE = re.compile(r"Avg episode reward: \[\(0, '(-?[0-9.naif]+)'\)")


@dataclass
class RunResult:
    returncode: int
    output: str  # stdout and stderr interleaved, as a user would see them
    seconds: float

    def collected(self) -> dict[int, int]:
        """Samples per policy from the last ``Collected {0: N, ...}`` line; {} when the line is missing."""
        matches = _COLLECTED_RE.findall(self.output)
        if not matches:
            return {}
        pairs = (item.split(":") for item in matches[-1].split(",") if item.strip())
        return {int(policy): int(samples) for policy, samples in pairs}

    def last_reward(self) -> float | None:
        found = _REWARD_RE.findall(self.output)
        return float(found[-1]) if found else None

    def best_reward(self) -> float | None:
        """The highest ``Avg episode reward`` line of the run (each is a mean over up to 100 episodes)."""
        found = _REWARD_RE.findall(self.output)
        return max(float(r) for r in found) if found else None

    def explain(self) -> str:
        return f"exit code {self.returncode} after {self.seconds:.1f}s, last output:\n{self.output[-4000:]}"

    def assert_trained(self, min_samples: int, policy: int = 0) -> None:
        """The run exited cleanly and its last ``Collected`` line counts at least ``min_samples`` for ``policy``."""
        assert self.returncode == 0, self.explain()
        collected = self.collected()
        assert collected.get(policy, 0) >= min_samples, f"collected {collected}\n{self.explain()}"


def short_run_args(train_dir: object, env: str, steps: int, *extra: str, **flags: object) -> list[str]:
    """Flags of a short CPU run of ``env`` (experiment named after it, one worker, two envs, seed 1); ``flags``
    override or add ``--name=value`` pairs, ``extra`` are appended as they are."""
    values: dict[str, object] = dict(
        env=env, train_dir=train_dir, experiment=env, train_for_env_steps=steps, device="cpu", num_workers=1,
        num_envs_per_worker=2, rollout=32, seed=1,
    )  # fmt: skip
    values.update(flags)
    return [f"--{name}={value}" for name, value in values.items()] + list(extra)


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports nothing listens on right now (the OS picks them; all held open until each is known)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def shm_entries() -> set[str]:
    try:
        return {e for e in os.listdir("/dev/shm") if not e.startswith(IGNORED_SHM)}
    except FileNotFoundError:
        return set()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _reap_group(pgid: int) -> bool:
    """Wait for the group to empty; kill whatever remains. True when processes had to be killed."""
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


def start(cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def start_until(cmd: list[str], marker: str) -> tuple[subprocess.Popen, list[str]]:
    """Start ``cmd`` and read its output until a line containing ``marker`` (e.g. training really runs)."""
    proc = start(cmd)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if marker in line:
            break
    return proc, seen


def finish(proc: subprocess.Popen, started: float, timeout: float, shm_before: set[str]) -> RunResult:
    """Wait for ``proc``; assert its whole session is gone and it left no /dev/shm entry."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        _reap_group(proc.pid)
        raise AssertionError(f"run did not finish in {timeout} s:\n{out[-3000:]}") from exc
    result = RunResult(proc.returncode, out, time.monotonic() - started)
    assert not _reap_group(proc.pid), f"processes outlived the run (killed them):\n{result.explain()}"
    leaked = shm_entries() - shm_before
    assert not leaked, f"/dev/shm entries left behind: {sorted(leaked)}\n{result.explain()}"
    return result


def run_python(args: list[str], timeout: float = 180.0) -> RunResult:
    """``python args`` in a new session; asserts no process or /dev/shm entry of it remains."""
    before = shm_entries()
    started = time.monotonic()
    return finish(start([sys.executable, *args]), started, timeout, before)


def run_python_until(args: list[str], stop_when: Callable[[str], bool], timeout: float = 180.0) -> RunResult:
    """``python args`` in a new session, interrupted as a user would (SIGINT, Ctrl+C) at the first output line for
    which ``stop_when`` is true; the run then saves, exits with INTERRUPTED (2) and must leave nothing behind, as in
    ``run_python``. A run that ends on its own first keeps its exit code. Over ``timeout`` the whole session is killed
    and the test fails."""
    before = shm_entries()
    started = time.monotonic()
    proc = start([sys.executable, *args])
    timed_out = threading.Event()

    def kill_on_timeout() -> None:
        timed_out.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # the run ended just now; its group is gone

    watchdog = threading.Timer(timeout, kill_on_timeout)
    watchdog.start()
    seen = []
    try:
        for line in proc.stdout:  # EOF when the run ends by itself or the watchdog kills it
            seen.append(line)
            if stop_when(line):
                try:
                    os.kill(proc.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass  # it ended by itself after printing the line: its exit code stands
                break
    finally:
        watchdog.cancel()
    if timed_out.is_set():
        proc.communicate()
        _reap_group(proc.pid)
        raise AssertionError(f"run did not finish in {timeout} s:\n{''.join(seen)[-3000:]}")
    result = finish(proc, started, max(1.0, timeout - (time.monotonic() - started)), before)
    return RunResult(result.returncode, "".join(seen) + result.output, result.seconds)


def reward_reached(threshold: float) -> Callable[[str], bool]:
    """A ``stop_when`` for ``run_python_until``: true on an ``Avg episode reward`` line of policy 0 >= threshold."""

    def reached(line: str) -> bool:
        found = _REWARD_RE.search(line)
        return found is not None and float(found.group(1)) >= threshold

    return reached


def run_module(module: str, args: list[str], timeout: float = 180.0) -> RunResult:
    return run_python(["-m", module, *args], timeout)


def run_script(path: str, args: list[str], timeout: float = 180.0) -> RunResult:
    return run_python([path, *args], timeout)
