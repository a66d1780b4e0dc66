"""The batcher copies whole trajectories into batches and frees slots at the right moment."""

from __future__ import annotations

import queue

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.algo.learning.batcher import Batcher
from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.event_loop import EventLoop, LocalInbox, Router
from sample_factory.algo.utils.shared_buffers import LocalQueue, allocate_trajectories
from sample_factory.cfg.arguments import default_cfg


def _setup(async_rl: bool):
    cfg = default_cfg(env="x")
    cfg.rollout, cfg.batch_size, cfg.num_batches_per_epoch, cfg.num_batches_to_accumulate = 4, 8, 1, 1
    cfg.async_rl = async_rl
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    traj = allocate_trajectories(cfg, info, num_slots=6, share=False)
    traj["rewards"][:] = torch.arange(6).float()[:, None]
    free = LocalQueue()
    router = Router({"batcher_p0": "main", "learner_p0": "main"}, {"main": LocalInbox()})
    loop = EventLoop("main", router.inboxes["main"], router)
    batcher = Batcher(cfg, info, 0, router, traj, free)
    loop.add_component(batcher)
    batcher.on_start()
    return batcher, free, loop


def test_async_batch_copies_and_frees_slots_at_once():
    batcher, free, loop = _setup(async_rl=True)
    batcher.on_new_trajectories([4], frames=4)
    assert not loop.local_messages  # one trajectory of the two needed
    batcher.on_new_trajectories([1, 3], frames=8)
    assert list(loop.local_messages) == [("learner_p0", "on_batch_ready", (0,))]
    assert batcher.batches[0]["rewards"][:, 0].tolist() == [4.0, 1.0]
    assert sorted(free.get_many()) == [1, 4]
    assert batcher.env_steps == 12
    # the single batch buffer is busy: slot 3 waits until training is done
    batcher.on_new_trajectories([5], frames=4)
    assert len(loop.local_messages) == 1
    batcher.on_training_done(0)
    assert len(loop.local_messages) == 2 and batcher.batches[0]["rewards"][:, 0].tolist() == [3.0, 5.0]


def test_sync_mode_holds_slots_until_trained():
    batcher, free, _ = _setup(async_rl=False)
    batcher.on_new_trajectories([0, 2], frames=8)
    with pytest.raises(queue.Empty):  # nothing freed before training
        free.get_many()
    batcher.on_training_done(0)
    assert sorted(free.get_many()) == [0, 2]
