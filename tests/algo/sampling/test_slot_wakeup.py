"""A rollout worker waiting for trajectory slots is woken by the message that frees them, with no timeout or sleep.

The worker runs on an in-process event loop (no processes). Its inference worker, batcher and runner live on another
loop whose inbox nobody reads, so the test sees what the worker sends and plays the inference worker itself.
"""

from __future__ import annotations

import queue
import threading
import time

import pytest
import torch
from sampling_helpers import ROLLOUT, cartpole_sampling_cfg

from sample_factory.algo.runners.setup import obtain_env_info
from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.algo.utils.event_loop import EventLoop, LocalInbox, Router, make_mp_inbox
from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.algo.utils.shared_buffers import SlotOwners, allocate_trajectories

WORKER = "rollout_w0"


class _Setup:
    """One worker, two splits of one CartPole env each, and exactly one slot per actor: a finished split must wait."""

    def __init__(self, tmp_path, inbox, restart: RestartInfo | None = None) -> None:
        cfg = cartpole_sampling_cfg(tmp_path, "wake", "--num_workers=1", "--num_envs_per_worker=2")
        env_info = obtain_env_info(cfg)
        self.traj = allocate_trajectories(cfg, env_info, 2, share=False)
        others = {"inference_p0_w0": "rest", "batcher_p0": "rest", "runner": "rest"}
        self.router = Router({WORKER: "w", **others}, {"w": inbox, "rest": LocalInbox()})
        self.loop = EventLoop("w", inbox, self.router, idle_timeout=30.0)  # a wait for messages would be long
        self.worker = RolloutWorker(cfg, env_info, 0, self.router, self.traj, SlotOwners(2, 1, 2), restart=restart)
        self.loop.add_component(self.worker)
        self.loop.start_components()
        self.sent()  # start-up reports to the runner

    def sent(self) -> list:
        """What the worker sent to the other loop since the last call."""
        try:
            return self.router.inboxes["rest"].get_many(block=False)
        except queue.Empty:
            return []

    def finish_rollouts(self, splits: list[int]) -> None:
        """Play the inference worker (actions stay 0) until ``splits`` complete their rollout."""
        for _ in range(ROLLOUT):
            self.router.deliver("w", (WORKER, "on_actions_ready", (splits,)))
            self.loop.run_once()

    def close(self) -> None:
        self.loop.stop_components()


@pytest.fixture
def no_sleeping(monkeypatch):
    """Any time.sleep (a polling wait) fails the test."""

    def forbidden(seconds: float) -> None:
        raise AssertionError(f"time.sleep({seconds}) called: waiting must be by message, not by sleeping")

    monkeypatch.setattr(time, "sleep", forbidden)


def test_freed_slots_from_another_process_wake_the_waiting_split_at_once(tmp_path, no_sleeping):
    inbox = make_mp_inbox()  # the real cross-process inbox, used in-process
    setup = _Setup(tmp_path, inbox)
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
    setup = _Setup(tmp_path, LocalInbox())
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


def _split_0_waiting(tmp_path) -> tuple[_Setup, RolloutWorker]:
    """A worker on a local loop whose split 0 finished its rollout and waits for slots; messages so far dropped."""
    setup = _Setup(tmp_path, LocalInbox())
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
    setup = _Setup(tmp_path, LocalInbox(), restart=RestartInfo(incarnation=1, withheld_slots={0: [1]}))
    worker = setup.worker
    assert worker.pending_reset and 1 in worker.pending_reset  # split 1 has no slot yet: not reset, no error
    worker.on_begin_sampling()
    assert [m[1:] for m in setup.sent()] == [("on_policy_request", (0, 0, 0, [0]))]  # split 0 samples at once
    worker.send(WORKER, "on_slots_freed", [1])  # the batcher hands the withheld slot over
    setup.loop.run_once()
    assert not worker.pending_reset and worker.splits_started == [True, True]
    assert [m[1:] for m in setup.sent()] == [("on_policy_request", (0, 1, 0, [1]))]
    setup.close()
