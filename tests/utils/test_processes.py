"""CPU cores each rollout worker is pinned to; finding a run's child by its process title; a finished command's quick
exit that still does what an exit is relied on for."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

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


def _exit_script(tmp_path, body: str) -> subprocess.CompletedProcess:
    """Run ``body`` (which ends by calling exit_process) in a fresh interpreter that registered an atexit handler."""
    marker = tmp_path / "atexit_ran"
    code = textwrap.dedent(
        f"""
        import atexit, sys, threading, time
        from sample_factory.utils.processes import exit_process
        atexit.register(lambda: open({str(marker)!r}, "w").write("yes"))
        sys.stdout.write("buffered, no newline")  # a pipe: block-buffered, lost unless flushed
        """
    ) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("status, expected", [(3, 3), (None, 0), (0, 0), (-1, 255)])
def test_exit_process_runs_atexit_flushes_and_keeps_the_exit_code(tmp_path, status, expected):
    result = _exit_script(tmp_path, f"exit_process({status!r})\nprint('not reached')\n")
    assert result.returncode == expected, result.stderr
    assert result.stdout == "buffered, no newline"
    assert (tmp_path / "atexit_ran").read_text() == "yes"


def test_exit_process_waits_for_a_running_non_daemon_thread_like_sys_exit(tmp_path):
    """os._exit would kill the thread mid-work: the normal exit runs instead, which waits for it to finish."""
    body = """
        done = []
        release = threading.Event()
        worker = threading.Thread(target=lambda: (release.wait(), time.sleep(0.2), done.append(1), print(" done")))
        worker.start()
        atexit.register(lambda: print(" threads done:", len(done)))
        threading.Timer(0.1, release.set).start()
        exit_process(4)
    """
    result = _exit_script(tmp_path, body)
    assert result.returncode == 4, result.stderr
    assert "done" in result.stdout and "threads done: 1" in result.stdout
    assert (tmp_path / "atexit_ran").read_text() == "yes"


def test_exit_process_with_a_message_status_is_sys_exit(tmp_path):
    result = _exit_script(tmp_path, "exit_process('bad flag: --x')\n")
    assert result.returncode == 1
    assert "bad flag: --x" in result.stderr
