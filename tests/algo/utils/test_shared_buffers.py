"""Trajectory slot sizing and layout, weights publishing and the free-slot queue."""

from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import torch

from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.shared_buffers import (
    PolicyWeights,
    allocate_trajectories,
    make_free_slot_queue,
    num_trajectory_slots,
    numpy_views,
)
from sample_factory.cfg.arguments import default_cfg


def _env_info(action_space, obs_space=None) -> EnvInfo:
    obs_space = obs_space or gym.spaces.Box(-1, 1, (4,), np.float32)
    return EnvInfo(obs_space, action_space, num_agents=1, is_multiagent=False, frameskip=1, reward_shaping_scheme=None)


def test_layout_matches_contract():
    cfg = default_cfg(env="CartPole-v1")
    cfg.rollout, cfg.use_rnn = 8, False
    obs = gym.spaces.Dict({"img": gym.spaces.Box(0, 255, (3, 8, 8), np.uint8), "vec": gym.spaces.Box(-1, 1, (2,))})
    traj = allocate_trajectories(cfg, _env_info(gym.spaces.Discrete(3), obs), num_slots=5, share=False)
    assert traj["obs"]["img"].shape == (5, 9, 3, 8, 8) and traj["obs"]["img"].dtype == torch.uint8
    assert traj["obs"]["vec"].shape == (5, 9, 2)
    assert traj["actions"].shape == (5, 8) and traj["actions"].dtype == torch.int64
    assert traj["action_logits"].shape == (5, 8, 3)
    assert traj["rnn_states"].shape == (5, 9, 1)
    assert traj["valids"].dtype == torch.bool


def test_box_actions_and_numpy_views_share_memory():
    cfg = default_cfg(env="x")
    cfg.rollout = 4
    traj = allocate_trajectories(cfg, _env_info(gym.spaces.Box(-1, 1, (2,))), num_slots=2, share=False)
    assert traj["actions"].shape == (2, 4, 2) and traj["actions"].dtype == torch.float32
    views = numpy_views(traj)
    views["rewards"][1, 2] = 5.0
    assert traj["rewards"][1, 2] == 5.0


def test_slot_count_async_and_sync():
    cfg = default_cfg(env="x")
    cfg.num_workers, cfg.num_envs_per_worker, cfg.rollout, cfg.batch_size = 2, 4, 32, 1024
    info = _env_info(gym.spaces.Discrete(2))
    cfg.async_rl = True
    assert num_trajectory_slots(cfg, info) == 2 * 8 + 1024 // 32
    cfg.async_rl = False
    # sync: whole rounds of all actors, enough for one batch of 32 trajectories
    assert num_trajectory_slots(cfg, info) == 32


def test_weights_publish_and_load():
    model = torch.nn.Linear(3, 2)
    weights = PolicyWeights(model.state_dict(), threading.Lock())
    other = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.add_(1.0)
    weights.publish(model.state_dict(), version=7)
    assert weights.latest_version() == 7
    assert weights.load_into(other) == 7
    assert torch.equal(other.weight, model.weight)


def test_free_slot_queue_starts_full():
    q = make_free_slot_queue(serial=True, num_slots=5)
    assert sorted(q.get_many(max_messages_to_get=10)) == [0, 1, 2, 3, 4]
