"""Trajectory slot sizing and layout, weights publishing and which rollout worker owns which slot."""

from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.algo.utils.shared_buffers import (
    PolicyWeights,
    SlotOwners,
    allocate_trajectories,
    make_slot_owners,
    num_trajectory_slots,
    numpy_views,
)
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo


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


@pytest.mark.parametrize(
    ("num_policies", "num_workers", "envs", "batch_size"), [(2, 2, 4, 256), (4, 3, 2, 64), (8, 1, 6, 96)]
)
def test_sync_slots_with_several_policies_leave_every_worker_room_to_finish_a_rollout(
    num_policies: int, num_workers: int, envs: int, batch_size: int
):
    """Worst case of a stall: every batcher holds one trajectory short of a batch, all of them one worker's slots.

    That worker must still own a slot for each of its actors, so sampling goes on until some batch is full."""
    cfg = default_cfg(env="x")
    cfg.num_workers, cfg.num_envs_per_worker, cfg.rollout, cfg.batch_size = num_workers, envs, 16, batch_size
    cfg.async_rl, cfg.num_policies = False, num_policies
    info = _env_info(gym.spaces.Discrete(2))
    num_slots = num_trajectory_slots(cfg, info)
    owners = SlotOwners(num_slots, num_workers, envs)
    held_by_partial_batches = num_policies * (batch_size // 16 - 1)
    for worker in range(num_workers):
        assert len(owners.initial_free(worker)) - held_by_partial_batches >= envs


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


def test_slots_are_dealt_in_blocks_of_one_workers_actors():
    owners = SlotOwners(num_slots=14, num_workers=2, actors_per_worker=3)
    # blocks [0,1,2] [3,4,5] [6,7,8] [9,10,11] [12,13] go to workers 0 1 0 1 0
    assert owners.initial_free(0) == [0, 1, 2, 6, 7, 8, 12, 13]
    assert owners.initial_free(1) == [3, 4, 5, 9, 10, 11]
    assert [owners.owner(s) for s in (2, 3, 8, 9, 13)] == [0, 1, 0, 1, 0]
    # a worker's first block is the consecutive slots the standalone vector env runners assume
    assert owners.initial_free(1)[:3] == [3, 4, 5]


def test_every_slot_has_exactly_one_owner():
    owners = SlotOwners(num_slots=37, num_workers=3, actors_per_worker=4)
    dealt = [s for w in range(3) for s in owners.initial_free(w)]
    assert sorted(dealt) == list(range(37))


def test_give_back_sends_each_owner_its_slots_in_one_message():
    owners = SlotOwners(num_slots=8, num_workers=2, actors_per_worker=2)
    sent = []
    owners.give_back(lambda *msg: sent.append(msg), [5, 0, 2, 1, 7])
    # blocks of two: slots 0, 1, 4, 5 belong to worker 0 and 2, 3, 6, 7 to worker 1
    assert sent == [("rollout_w0", "on_slots_freed", [5, 0, 1]), ("rollout_w1", "on_slots_freed", [2, 7])]
    owners.give_back(lambda *msg: sent.append(msg), [])
    assert len(sent) == 2  # nothing freed: no message


def test_slot_owners_refuse_too_few_slots_or_no_workers():
    with pytest.raises(ValueError, match="num_trajectory_slots"):
        SlotOwners(num_slots=5, num_workers=2, actors_per_worker=3)
    with pytest.raises(ValueError, match="--num_workers"):
        SlotOwners(num_slots=5, num_workers=0, actors_per_worker=3)


def test_slot_owners_of_a_run_cover_every_actor_of_every_worker():
    cfg = default_cfg(env="x")
    cfg.num_workers, cfg.num_envs_per_worker, cfg.async_rl = 3, 4, False
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=2)
    num_slots = num_trajectory_slots(cfg, info)
    owners = make_slot_owners(cfg, info, num_slots)
    # sync mode: every worker owns the same whole number of rounds of its 8 actors
    sizes = {len(owners.initial_free(w)) for w in range(3)}
    assert len(sizes) == 1 and sizes.pop() % 8 == 0
