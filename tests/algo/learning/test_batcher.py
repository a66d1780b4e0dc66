"""The batcher copies whole trajectories into batches, frees slots at the right moment, and talks to its learner
only by messages: ``on_batch_ready(batch_idx, env_steps)`` out, ``on_training_done(batch_idx, release_slots)`` in."""

from __future__ import annotations

import queue
import time

import gymnasium as gym
import numpy as np
import torch

from sample_factory.algo.learning.batch_buffers import LearnerLink, TrainingBatches, batch_placement
from sample_factory.algo.learning.batcher import Batcher
from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.utils.sampler_state import SamplerStateExchange
from sample_factory.algo.utils.shared_buffers import SlotOwners, allocate_trajectories
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import Component, EventLoop, LocalInbox, Router


def _setup(
    async_rl: bool, sampler_states: SamplerStateExchange | None = None, idle_timeout: float = 0.1, accumulate: int = 1
):
    cfg = default_cfg(env="x")
    cfg.rollout, cfg.batch_size, cfg.num_batches_per_epoch, cfg.num_batches_to_accumulate = 4, 8, 1, accumulate
    cfg.async_rl = async_rl
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    traj = allocate_trajectories(cfg, info, num_slots=6, share=False)
    traj["rewards"][:] = torch.arange(6).float()[:, None]
    owners = SlotOwners(num_slots=6, num_workers=2, actors_per_worker=1)  # even slots: worker 0, odd: worker 1
    # the rollout workers and the runner live on other loops: what is sent there waits in those loops' inboxes
    loops = {"batcher_p0": "main", "learner_p0": "main", "rollout_w0": "w", "rollout_w1": "w", RUNNER: "r"}
    router = Router(loops, {"main": LocalInbox(), "w": LocalInbox(), "r": LocalInbox()})
    loop = EventLoop("main", router.inboxes["main"], router, idle_timeout=idle_timeout)
    batches = TrainingBatches(cfg, info, batch_placement("cpu"))
    batcher = Batcher(cfg, LearnerLink(PolicyWiring(0, info, traj, owners, None), batches, sampler_states), router)
    loop.add_component(batcher)
    return batcher, router.inboxes, loop


def _taken(inbox: LocalInbox) -> list:
    try:
        return inbox.get_many(block=False)
    except queue.Empty:
        return []


def _freed(inboxes: dict) -> dict[str, list[int]]:
    """Slots given back per rollout worker (and nothing but ``on_slots_freed`` may have been sent there)."""
    freed: dict[str, list[int]] = {}
    for component, slot, (slots,) in _taken(inboxes["w"]):
        assert slot == "on_slots_freed"
        freed.setdefault(component, []).extend(slots)
    return freed


def test_async_batch_copies_and_frees_slots_at_once():
    batcher, inboxes, loop = _setup(async_rl=True, accumulate=2)
    batcher.on_new_trajectories([4], frames=4)
    assert not loop.local_messages  # one trajectory of the two needed
    batcher.on_new_trajectories([1, 3], frames=8)
    # the learner hears which buffer is ready and how many frames came in so far: nothing else
    assert list(loop.local_messages) == [("learner_p0", "on_batch_ready", (1, 12))]
    assert batcher.batches[1]["rewards"][:, 0].tolist() == [4.0, 1.0]
    # another buffer is free: each slot goes back to its own worker at once, by message
    assert _freed(inboxes) == {"rollout_w0": [4], "rollout_w1": [1]}


def test_async_batch_taking_the_last_free_buffer_keeps_its_slots_until_a_batch_is_trained():
    batcher, inboxes, loop = _setup(async_rl=True)  # one buffer (--num_batches_to_accumulate=1)
    batcher.on_new_trajectories([4, 1], frames=8)
    assert list(loop.local_messages) == [("learner_p0", "on_batch_ready", (0, 8))]
    assert _freed(inboxes) == {} and batcher.deferred == [4, 1]  # no buffer left: its slots stay out of sampling
    # the buffer is busy: slots 3 and 5 wait, still in their slots, until training is done
    batcher.on_new_trajectories([3, 5], frames=8)
    assert len(loop.local_messages) == 1 and _freed(inboxes) == {}
    batcher.on_training_done(0, True)
    assert loop.local_messages[-1] == ("learner_p0", "on_batch_ready", (0, 16))
    assert batcher.batches[0]["rewards"][:, 0].tolist() == [3.0, 5.0]
    assert _freed(inboxes) == {"rollout_w0": [4], "rollout_w1": [1]}  # the trained batch's slots
    assert batcher.deferred == [3, 5]  # the new batch took the only buffer again


def test_sync_mode_holds_slots_until_trained():
    batcher, inboxes, _ = _setup(async_rl=False)
    batcher.on_new_trajectories([0, 2], frames=8)
    assert _freed(inboxes) == {}  # nothing freed before training
    batcher.on_training_done(0, True)
    assert _freed(inboxes) == {"rollout_w0": [0, 2]}


def test_sync_mode_keeps_the_slots_when_asked_to_leave_the_sampler_at_rest():
    batcher, inboxes, _ = _setup(async_rl=False)
    batcher.on_new_trajectories([1, 2], frames=8)
    batcher.on_training_done(0, False)
    assert _freed(inboxes) == {} and batcher.free_batches == [0]


def test_the_batcher_announces_itself_and_reports_its_own_stop():
    batcher, inboxes, loop = _setup(async_rl=True)
    loop.start_components()
    assert ("runner", "on_component_ready", ("batcher_p0",)) in _taken(inboxes["r"])
    batcher.on_stop_requested()
    stopped = [args for _, slot, args in _taken(inboxes["r"]) if slot == "on_component_stopped"]
    assert [args[0] for args in stopped] == ["batcher_p0"]
    batcher.on_new_trajectories([0, 1], frames=8)
    assert not loop.local_messages, "a stopped batcher makes no batch"


def test_trajectories_waiting_in_the_batcher_keep_the_sampler_from_being_saved():
    exchange = SamplerStateExchange()
    exchange.register(0, lambda: {"worker": "at rest"})
    batcher, _, _ = _setup(async_rl=False, sampler_states=exchange)
    assert exchange.capture() is not None
    batcher.on_new_trajectories([0], frames=4)  # half a batch waits: its data is in no saved state
    assert exchange.capture() is None
    batcher.on_new_trajectories([2], frames=4)  # now in a batch: the learner owns it
    assert exchange.capture() is not None


class TrainingLearner(Component):
    """``learner_p0`` that trains at once: hands every ready batch back by message, as the learner worker does."""

    def __init__(self, router: Router, batches: TrainingBatches) -> None:
        super().__init__("learner_p0", router)
        self.batches = batches
        self.seen: list[tuple[int, list[float]]] = []

    def on_batch_ready(self, batch_idx: int, env_steps: int) -> None:
        self.seen.append((env_steps, self.batches[batch_idx]["rewards"][:, 0].tolist()))
        self.send("batcher_p0", "on_training_done", batch_idx, True)


def test_the_batch_and_training_round_trip_finishes_in_one_loop_iteration_without_waiting():
    """Messages between the batcher and its learner stay on their loop: a long idle timeout is never waited for."""
    batcher, inboxes, loop = _setup(async_rl=False, idle_timeout=30.0)
    learner = TrainingLearner(batcher.router, batcher.batches)
    loop.add_component(learner)
    loop.running = True
    inboxes["main"].put(("batcher_p0", "on_new_trajectories", ([1, 2, 3, 4], 16)))
    started = time.monotonic()
    loop.run_once()
    assert time.monotonic() - started < 5.0
    assert learner.seen == [(16, [1.0, 2.0]), (16, [3.0, 4.0])]  # two batches through the one buffer
    assert _freed(inboxes) == {"rollout_w0": [2, 4], "rollout_w1": [1, 3]}
