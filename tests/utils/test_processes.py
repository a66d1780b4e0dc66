"""CPU cores each rollout worker is pinned to; finding a run's child by its process title."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.processes import cores_for_worker_process, pid_by_title, pins_rollout_workers


def _all(num_workers: int, cpu_count: int) -> list[list[int] | None]:
    return [cores_for_worker_process(i, num_workers, cpu_count) for i in range(num_workers)]


def test_more_workers_than_cores_round_robin():
    assert _all(4, 4) == [[0], [1], [2], [3]]
    assert _all(6, 3) == [[0], [1], [2], [0], [1], [2]]


def test_workers_left_over_after_full_rounds_share_all_cores():
    """44 workers on 20 cores: two full rounds, then the last 4 workers get 5 cores each (not cores 0-3 again)."""
    assignment = _all(44, 20)
    assert assignment[:40] == [[i % 20] for i in range(40)]
    assert assignment[40:] == [list(range(0, 5)), list(range(5, 10)), list(range(10, 15)), list(range(15, 20))]
    assert _all(5, 2) == [[0], [1], [0], [1], [0, 1]]


def test_more_cores_than_workers_each_gets_its_share():
    assert _all(2, 8) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    shares = _all(3, 8)
    assert sorted(core for share in shares for core in share) == list(range(8))  # every core used exactly once
    assert {len(share) for share in shares} == {2, 3}  # uneven split differs by one core at most


@pytest.mark.parametrize(
    ("affinity", "async_rl", "typed", "pinned"),
    [
        (True, True, False, True),  # async: the default pins
        (True, False, False, False),  # sync: the default leaves the workers to the scheduler
        (True, False, True, True),  # sync, --set_workers_cpu_affinity=True typed: pinned as asked
        (False, True, True, False),
        (False, False, True, False),
    ],
)
def test_pinning_follows_the_flag_except_the_default_in_sync_mode(affinity, async_rl, typed, pinned):
    cli_args = {"set_workers_cpu_affinity": affinity} if typed else {"env": "CartPole-v1"}
    cfg = AttrDict(set_workers_cpu_affinity=affinity, async_rl=async_rl, cli_args=cli_args)
    assert pins_rollout_workers(cfg) is pinned


def test_single_core_nothing_to_pin():
    assert _all(3, 1) == [None, None, None]


@pytest.mark.parametrize(("worker_idx", "num_workers", "cpu_count"), [(3, 3, 4), (-1, 2, 4), (0, 0, 4), (0, 2, 0)])
def test_bad_arguments_are_refused(worker_idx, num_workers, cpu_count):
    with pytest.raises(ValueError):
        cores_for_worker_process(worker_idx, num_workers, cpu_count)


def test_pid_by_title_finds_the_titled_process_of_its_session_only():
    code = (
        "import setproctitle, sys; setproctitle.setproctitle('probe_w0 [t]'); print('ready', flush=True); "
        "sys.stdin.read()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert pid_by_title(proc.pid, "probe_w0") == proc.pid
        with pytest.raises(LookupError, match="no process titled probe_w1"):
            pid_by_title(proc.pid, "probe_w1")
        with pytest.raises(LookupError):
            pid_by_title(os.getpgid(0), "probe_w0")  # another session's process is never returned
    finally:
        proc.communicate("")
