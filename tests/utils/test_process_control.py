"""Ending processes that do not stop by themselves, listing a process's children, pinning a worker to its cores."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from sample_factory.utils.processes import cores_for_worker_process
from sample_factory.utils.utils import (
    join_or_kill,
    kill,
    kill_processes,
    list_child_processes,
    set_process_cpu_affinity,
)

# prints the pid of a grandchild that sleeps, then sleeps itself: a process tree of two that never ends by itself
TREE = "import subprocess, sys, time; g = subprocess.Popen(['sleep', '600']); print(g.pid, flush=True); time.sleep(600)"


@pytest.fixture
def spawn() -> Iterator[object]:
    ctx = multiprocessing.get_context("spawn")
    started: list[multiprocessing.Process] = []

    class Tracking:
        def Process(self, **kwargs):  # noqa: N802  (the multiprocessing name)
            process = ctx.Process(**kwargs)
            started.append(process)
            return process

    yield Tracking()
    for process in started:  # whatever a failed test left behind
        if process.is_alive():
            process.kill()
        process.join(timeout=10)


def _gone(pid: int) -> bool:
    try:
        psutil.Process(pid).wait(timeout=10)  # works for processes that are not our children too
    except psutil.NoSuchProcess:
        pass
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_kill_ends_the_whole_tree() -> None:
    child = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())
        assert {child.pid, grandchild} <= {p.pid for p in list_child_processes()}
        kill(child.pid)
        assert child.wait(timeout=10) == -9
        assert _gone(grandchild)
        assert child.pid not in {p.pid for p in list_child_processes()}
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    kill(child.pid)  # already reaped: no error


def test_list_child_processes_leaves_out_zombies() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped yet: a zombie
    try:
        assert child.pid not in {p.pid for p in list_child_processes()}
    finally:
        child.wait()


def test_join_or_kill(spawn) -> None:
    quick = spawn.Process(target=int)  # returns at once
    quick.start()
    assert join_or_kill(quick, timeout=30) is True and quick.exitcode == 0
    stuck = spawn.Process(target=time.sleep, args=(600,))
    stuck.start()
    assert join_or_kill(stuck, timeout=0.1) is False
    assert not stuck.is_alive() and stuck.exitcode == -9


def test_kill_processes_kills_and_reaps(spawn) -> None:
    processes = [spawn.Process(target=time.sleep, args=(600,)) for _ in range(2)]
    for process in processes:
        process.start()
    done = spawn.Process(target=int)
    done.start()
    done.join()
    kill_processes([*processes, done])
    assert [p.exitcode for p in processes] == [-9, -9] and done.exitcode == 0


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_set_process_cpu_affinity_pins_within_the_allowed_cores() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    code = (
        "import os; from sample_factory.utils.utils import set_process_cpu_affinity as s; "
        "print(s(worker_idx=1, num_workers=2), sorted(os.sched_getaffinity(0)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout
    cores = cores_for_worker_process(1, 2, len(allowed))
    if cores is None:
        assert out.split()[0] == "None"
    else:
        expected = [allowed[i] for i in cores]
        assert out.strip() == f"{expected} {expected}"
    assert set_process_cpu_affinity.__module__ == "sample_factory.utils.processes"
