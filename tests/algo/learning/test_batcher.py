"""The batcher copies whole trajectories into batches and frees slots at the right moment."""

from __future__ import annotations

import queue

import gymnasium as gym
import numpy as np
import torch

from sample_factory.algo.learning.batcher import Batcher
from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.event_loop import EventLoop, LocalInbox, Router
from sample_factory.algo.utils.shared_buffers import SlotOwners, allocate_trajectories
from sample_factory.cfg.arguments import default_cfg


def _setup(async_rl: bool):
    cfg = default_cfg(env="x")
    cfg.rollout, cfg.batch_size, cfg.num_batches_per_epoch, cfg.num_batches_to_accumulate = 4, 8, 1, 1
    cfg.async_rl = async_rl
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    traj = allocate_trajectories(cfg, info, num_slots=6, share=False)
    traj["rewards"][:] = torch.arange(6).float()[:, None]
    owners = SlotOwners(num_slots=6, num_workers=2, actors_per_worker=1)  # even slots: worker 0, odd: worker 1
    components = ["batcher_p0", "learner_p0"]
    # the rollout workers live on another loop: what the batcher gives back waits in that loop's inbox
    router = Router({**dict.fromkeys(components, "main"), "rollout_w0": "w", "rollout_w1": "w"}, _inboxes())
    loop = EventLoop("main", router.inboxes["main"], router)
    batcher = Batcher(cfg, info, 0, router, traj, owners)
    loop.add_component(batcher)
    batcher.on_start()
    return batcher, router.inboxes["w"], loop


def _inboxes() -> dict:
    return {"main": LocalInbox(), "w": LocalInbox()}


def _freed(inbox: LocalInbox) -> dict[str, list[int]]:
    """Slots given back per rollout worker (and nothing but ``on_slots_freed`` may have been sent there)."""
    freed: dict[str, list[int]] = {}
    try:
        messages = inbox.get_many(block=False)
    except queue.Empty:
        return freed
    for component, slot, (slots,) in messages:
        assert slot == "on_slots_freed"
        freed.setdefault(component, []).extend(slots)
    return freed


def test_async_batch_copies_and_frees_slots_at_once():
    batcher, workers, loop = _setup(async_rl=True)
    batcher.on_new_trajectories([4], frames=4)
    assert not loop.local_messages  # one trajectory of the two needed
    batcher.on_new_trajectories([1, 3], frames=8)
    assert list(loop.local_messages) == [("learner_p0", "on_batch_ready", (0,))]
    assert batcher.batches[0]["rewards"][:, 0].tolist() == [4.0, 1.0]
    # each slot goes back to its own worker, by message
    assert _freed(workers) == {"rollout_w0": [4], "rollout_w1": [1]}
    assert batcher.env_steps == 12
    # the single batch buffer is busy: slot 3 waits until training is done
    batcher.on_new_trajectories([5], frames=4)
    assert len(loop.local_messages) == 1 and _freed(workers) == {}
    batcher.on_training_done(0)
    assert len(loop.local_messages) == 2 and batcher.batches[0]["rewards"][:, 0].tolist() == [3.0, 5.0]
    assert _freed(workers) == {"rollout_w1": [3, 5]}


def test_sync_mode_holds_slots_until_trained():
    batcher, workers, _ = _setup(async_rl=False)
    batcher.on_new_trajectories([0, 2], frames=8)
    assert _freed(workers) == {}  # nothing freed before training
    batcher.on_training_done(0)
    assert _freed(workers) == {"rollout_w0": [0, 2]}


def test_sync_mode_keeps_the_slots_when_asked_to_leave_the_sampler_at_rest():
    batcher, workers, _ = _setup(async_rl=False)
    batcher.on_new_trajectories([1, 2], frames=8)
    batcher.on_training_done(0, release_slots=False)
    assert _freed(workers) == {} and batcher.free_batches == [0]
