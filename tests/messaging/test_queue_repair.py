"""Queues left locked by a killed process: the facts about faster-fifo that make it a hang, and their repair.

Each queue is poisoned deterministically (``queue_poison.poison``: a process takes the queue's lock and SIGKILLs
itself); the end-to-end test poisons the inboxes of a real parallel run and the run must complete.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import struct
import threading

import faster_fifo
from queue_poison import hold_until_killed, poison
from sf_run import run_script

from sample_factory.compat import faster_fifo_internals as queue_repair
from sample_factory.compat.faster_fifo_internals import HEADER, layout_supported, lock_holder, thread_alive
from sample_factory.messaging.queue_repair import QueueDoctor

HERE = os.path.dirname(os.path.abspath(__file__))
MESSAGE_COUNT_OFFSET = 40  # the sixth header word
BLOCKED_S = 0.3  # how long a put must stay blocked to count as blocked (its own timeout is shorter)


def _ring_state(q) -> tuple[int, int, int, int]:
    return HEADER.unpack_from(q.queue_obj_buffer, 0)[2:]  # head, tail, bytes used, messages


def _put_in_thread(q, msg) -> threading.Thread:
    thread = threading.Thread(target=q.put, args=(msg,), kwargs=dict(timeout=0.05), daemon=True)
    thread.start()
    return thread


def test_layout_matches_faster_fifo_messages_wrapping_around_the_ring():
    q = faster_fifo.Queue(max_size_bytes=200)
    assert layout_supported(q)
    ring = memoryview(q.shared_memory).cast("B")
    for i in range(7):  # more than fits at once: head and tail go round the 200 bytes, messages straddle the end
        msgs = [(i, "x" * (5 + i)), (i, b"y" * 9)]
        for m in msgs:
            q.put(m, timeout=1)
        head, tail, used, count = _ring_state(q)
        assert count == 2 and used == sum(8 + len(pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL)) for m in msgs)
        assert (head + used) % 200 == tail
        assert queue_repair._committed_bytes(ring, head, used, count) == used
        assert q.get_many(timeout=1) == msgs


def test_a_dead_holders_lock_blocks_every_put_whatever_its_timeout():
    """The bug: the mutex is not robust and put's timeout does not bound taking it (nor does get_many's)."""
    q = faster_fifo.Queue(max_size_bytes=10_000)
    pid = poison([q])
    assert lock_holder(q) == pid and not thread_alive(pid)
    blocked = _put_in_thread(q, "after the kill")
    blocked.join(BLOCKED_S)
    assert blocked.is_alive(), "put(timeout=0.05) returned although the lock is held by a dead process"
    assert [r.label for r in QueueDoctor(lambda: {"q": q}).check_once()] == ["q"]
    blocked.join(10)
    assert not blocked.is_alive() and lock_holder(q) is None
    assert q.get_many(timeout=1) == ["after the kill"]


def test_half_written_message_is_undone_and_earlier_ones_survive():
    q = faster_fifo.Queue(max_size_bytes=10_000)
    q.put_many(["a", "b"], timeout=1)
    before = _ring_state(q)
    poison([q], half_written=True)
    assert _ring_state(q)[2] == before[2] + 8  # the killed put's length is counted in the bytes used
    (repair,) = QueueDoctor(lambda: {"inbox of x": q}).check_once()
    assert repair.rolled_back_bytes == 8 and not repair.emptied
    assert "undoing a half-written message (8 bytes)" in repair.describe()
    assert _ring_state(q) == before
    q.put("c", timeout=1)
    assert q.get_many(timeout=1) == ["a", "b", "c"]


def test_ring_that_no_killed_put_explains_is_emptied_and_says_so():
    q = faster_fifo.Queue(max_size_bytes=10_000)
    q.put_many(["a", "b"], timeout=1)
    poison([q])
    struct.pack_into("<Q", q.queue_obj_buffer, MESSAGE_COUNT_OFFSET, 5)  # 5 messages in the bytes of 2
    (repair,) = QueueDoctor(lambda: {"q": q}).check_once()
    assert repair.emptied and repair.emptied_messages == 5 and "were dropped (5 messages)" in repair.describe()
    assert _ring_state(q) == (0, 0, 0, 0)
    q.put("fresh", timeout=1)
    assert q.get_many(timeout=1) == ["fresh"]


def test_lock_of_a_live_process_is_left_alone_until_it_dies():
    q = faster_fifo.Queue(max_size_bytes=10_000)
    ctx = multiprocessing.get_context("spawn")
    holding = ctx.Event()
    proc = ctx.Process(target=hold_until_killed, args=([q], holding))
    proc.start()
    try:
        assert holding.wait(60)
        doctor = QueueDoctor(lambda: {"q": q})
        assert doctor.check_once() == [] and lock_holder(q) == proc.pid
    finally:
        proc.kill()
        proc.join()
    assert [r.dead_thread for r in doctor.check_once()] == [proc.pid] and lock_holder(q) is None


def test_doctor_thread_frees_a_blocked_put_on_its_own():
    q = faster_fifo.Queue(max_size_bytes=10_000)
    poison([q])
    blocked = _put_in_thread(q, 1)
    doctor = QueueDoctor(lambda: {"q": q}, period_s=0.01)
    doctor.start()
    try:
        blocked.join(10)
    finally:
        doctor.stop()
    assert not blocked.is_alive() and doctor.repairs == 1


def test_unknown_layout_is_not_touched():
    assert not layout_supported(queue.Queue())


def test_parallel_run_with_inboxes_poisoned_by_a_killed_process_completes(tmp_path):
    result = run_script(
        os.path.join(HERE, "queue_poison.py"),
        [
            "--env=CartPole-v1",
            "--device=cpu",
            "--num_workers=2",
            "--num_envs_per_worker=2",
            "--train_for_env_steps=20000",
            f"--train_dir={tmp_path}",
            "--experiment=poison",
            "--decorrelate_experience_max_seconds=0",
        ],  # fmt: skip
        timeout=180,
    )
    assert result.returncode == 0, result.explain()
    assert "Queue repair: the inbox of runner was left locked by thread" in result.output, result.explain()
    assert "the inbox of rollout_w0 was left locked" in result.output
    assert "undoing a half-written message (8 bytes)" in result.output
    assert "queue repairs: 2" in result.output
    assert result.collected()[0] >= 20000


def test_thread_alive():
    assert thread_alive(threading.get_native_id())
    proc = multiprocessing.get_context("spawn").Process(target=os.getpid)
    proc.start()
    proc.join()
    assert not thread_alive(proc.pid) and not thread_alive(-1)


def test_runner_blocked_for_good_ends_the_run_with_failure_naming_the_queue(tmp_path):
    """The last line of defence: a lock nobody may break (its holder lives) blocks the runner's own loop."""
    result = run_script(
        os.path.join(HERE, "queue_poison.py"),
        [
            "--live_holder",
            "--env=CartPole-v1",
            "--device=cpu",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--train_for_env_steps=100000",
            f"--train_dir={tmp_path}",
            "--experiment=stall",
            "--heartbeat_timeout=3",
            "--reset_timeout_seconds=3",
        ],  # fmt: skip
        timeout=120,
    )
    assert result.returncode == 1, result.explain()
    assert "Parallel runner: the run made no progress for" in result.output, result.explain()
    assert "The inbox of runner is locked by thread" in result.output and "(alive)" in result.output
