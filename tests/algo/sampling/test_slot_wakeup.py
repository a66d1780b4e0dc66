"""A rollout worker waiting for trajectory slots is woken by the message that frees them, with no timeout or sleep.

The worker runs on an in-process event loop (no processes). Its inference worker, batcher and runner live on another
loop whose inbox nobody reads, so the test sees what the worker sends and plays the inference worker itself.
"""

from __future__ import annotations

import threading
import time

import pytest
import torch
from sampling_helpers import ROLLOUT, WORKER, OneWorkerLoop

from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.messaging.event_loop import LocalInbox, make_mp_inbox


@pytest.fixture
def no_sleeping(monkeypatch):
    """Any time.sleep (a polling wait) fails the test."""

    def forbidden(seconds: float) -> None:
        raise AssertionError(f"time.sleep({seconds}) called: waiting must be by message, not by sleeping")

    monkeypatch.setattr(time, "sleep", forbidden)


def test_freed_slots_from_another_process_wake_the_waiting_split_at_once(tmp_path, no_sleeping):
    inbox = make_mp_inbox()  # the real cross-process inbox, used in-process
    setup = OneWorkerLoop(tmp_path, inbox)
    worker = setup.worker
    worker.on_begin_sampling()
    assert [m[1:] for m in setup.sent()] == [
        ("on_policy_request", (0, 0, 0, [0])),
        ("on_policy_request", (0, 1, 0, [1])),
    ]
    setup.finish_rollouts([0])
    assert worker.waiting_for_slots == [0] and len(worker.free_slots) == 0
    assert ("batcher_p0", "on_new_trajectories", ([0], ROLLOUT)) in setup.sent()
    last_obs = setup.traj["obs"]["obs"][0, ROLLOUT].clone()

    # the batcher (another process in a real run) gives slot 0 back while the worker's loop waits for messages
    timer = threading.Timer(0.1, setup.router.deliver, ("w", (WORKER, "on_slots_freed", ([0],))))
    timer.start()
    started = time.monotonic()
    setup.loop.run_once()  # one iteration: the message itself resumes the split
    elapsed = time.monotonic() - started
    timer.join()
    assert elapsed < 2.0  # far below the loop's 30 s wait: woken by the message
    assert worker.waiting_for_slots == []
    assert [m[1:] for m in setup.sent()] == [("on_policy_request", (0, 0, 0, [0]))]
    assert torch.equal(setup.traj["obs"]["obs"][0, 0], last_obs)  # the new rollout continues where it stopped
    setup.close()
    inbox.close()


def test_in_one_process_the_freeing_message_resumes_splits_in_the_same_iteration(tmp_path, no_sleeping):
    setup = OneWorkerLoop(tmp_path, LocalInbox())
    worker = setup.worker
    worker.on_begin_sampling()
    setup.finish_rollouts([0, 1])
    assert worker.waiting_for_slots == [0, 1]
    setup.sent()

    # serial mode: the batcher shares the loop, its message is local
    worker.send(WORKER, "on_slots_freed", [1])
    setup.loop.run_once()
    assert worker.waiting_for_slots == [1]  # the first split in line got the slot
    assert [m[1:] for m in setup.sent()] == [("on_policy_request", (0, 0, 0, [1]))]

    worker.send(WORKER, "on_slots_freed", [0])
    setup.loop.run_once()
    assert worker.waiting_for_slots == []
    assert [m[1:] for m in setup.sent()] == [("on_policy_request", (0, 1, 0, [0]))]
    setup.close()


def _split_0_waiting(tmp_path) -> tuple[OneWorkerLoop, RolloutWorker]:
    """A worker on a local loop whose split 0 finished its rollout and waits for slots; messages so far dropped."""
    setup = OneWorkerLoop(tmp_path, LocalInbox())
    setup.worker.on_begin_sampling()
    setup.finish_rollouts([0])
    setup.sent()
    return setup, setup.worker


def test_without_a_freeing_message_a_waiting_split_stays_waiting(tmp_path):
    setup, worker = _split_0_waiting(tmp_path)
    setup.loop.idle_timeout = 0.001
    for _ in range(5):
        setup.loop.run_once()
    assert worker.waiting_for_slots == [0]
    assert not [m for m in setup.sent() if m[1] == "on_policy_request"]  # nothing polled a shared queue
    setup.close()


def test_slots_freed_while_stopping_are_kept_but_start_nothing(tmp_path):
    setup, worker = _split_0_waiting(tmp_path)
    worker.stopped = True
    worker.on_slots_freed([0])
    assert list(worker.free_slots) == [0] and worker.waiting_for_slots == [0]
    assert not [m for m in setup.sent() if m[1] == "on_policy_request"]
    setup.close()


def test_a_restarted_worker_whose_slots_a_batcher_still_holds_starts_when_they_come_back(tmp_path, no_sleeping):
    """Found by the churn soak (bench/soak_restarts.py): a rollout worker killed while the batcher held most of its
    slots was replaced by one that failed at start-up for want of slots, ending the run."""
    setup = OneWorkerLoop(tmp_path, LocalInbox(), restart=RestartInfo(incarnation=1, withheld_slots={0: [1]}))
    worker = setup.worker
    assert worker.pending_reset and 1 in worker.pending_reset  # split 1 has no slot yet: not reset, no error
    worker.on_begin_sampling()
    assert [m[1:] for m in setup.sent()] == [("on_policy_request", (0, 0, 0, [0]))]  # split 0 samples at once
    worker.send(WORKER, "on_slots_freed", [1])  # the batcher hands the withheld slot over
    setup.loop.run_once()
    assert not worker.pending_reset and worker.splits_started == [True, True]
    assert [m[1:] for m in setup.sent()] == [("on_policy_request", (0, 1, 0, [1]))]
    setup.close()
