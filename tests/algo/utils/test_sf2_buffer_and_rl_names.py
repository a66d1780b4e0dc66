"""Sample Factory 2's buffer-allocation and counting helpers at ``algo.utils.shared_buffers`` / ``rl_utils``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.algo.utils.rl_utils import (
    gae_advantages,
    num_agents_per_worker,
    prepare_and_normalize_obs,
    total_num_agents,
    total_num_envs,
    trajectories_per_minibatch,
    trajectories_per_training_iteration,
)
from sample_factory.algo.utils.shared_buffers import (
    BufferMgr,
    action_info,
    alloc_policy_output_tensors,
    alloc_trajectory_tensors,
    init_tensor,
    policy_device,
    policy_output_shapes,
)
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.model.actor_critic import create_actor_critic


def _cfg(**flags: object):
    cfg = default_cfg(env="x")
    for name, value in dict(num_workers=2, num_envs_per_worker=4, worker_num_splits=2, rollout=8, batch_size=32,
                            num_batches_per_epoch=3, use_rnn=False, serial_mode=True, **flags).items():  # fmt: skip
        setattr(cfg, name, value)
    return cfg


def _env_info(action_space: gym.Space, num_agents: int = 3) -> EnvInfo:
    return EnvInfo(gym.spaces.Box(-1, 1, (5,), np.float32), action_space, num_agents=num_agents)


def test_counts_from_the_flags() -> None:
    cfg, info = _cfg(), _env_info(gym.spaces.Discrete(2))
    assert total_num_envs(cfg) == 8 and total_num_agents(cfg, info) == 24 and num_agents_per_worker(cfg, info) == 12
    assert trajectories_per_minibatch(cfg) == 4 and trajectories_per_training_iteration(cfg) == 12


def test_gae_takes_sf2_names_positionally_and_the_spelled_out_keywords() -> None:
    rewards, dones = torch.tensor([[1.0, 1.0]]), torch.zeros(1, 2)
    values, valids = torch.tensor([[0.5, 0.5, 2.0]]), torch.ones(1, 3, dtype=torch.bool)
    positional = gae_advantages(rewards, dones, values, valids, 0.9, 1.0)
    # lambda 1: A_1 = 1 + 0.9 * 2 - 0.5 = 2.3, A_0 = 1 + 0.9 * 0.5 - 0.5 + 0.9 * 2.3 = 3.02
    torch.testing.assert_close(positional, torch.tensor([[3.02, 2.3]]))
    torch.testing.assert_close(gae_advantages(rewards, dones, values, valids, gamma=0.9, gae_lambda=1.0), positional)
    torch.testing.assert_close(gae_advantages(rewards, dones, values, valids, γ=0.9, λ=1.0), positional)
    with pytest.raises(TypeError, match="exactly one"):
        gae_advantages(rewards, dones, values, valids, 0.9, 1.0, gamma=0.9)


def test_init_tensor_shapes_dtypes_and_sharing() -> None:
    t = init_tensor([2, 3], np.uint8, (4, 0), "cpu", share=True)
    assert t.shape == (2, 3, 4) and t.dtype == torch.uint8 and t.is_shared() and int(t.sum()) == 0
    assert init_tensor(5, torch.float32, [], "cpu", share=False).shape == (5,)


def test_policy_output_layout() -> None:
    info = _env_info(gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Discrete(2)]))
    assert action_info(info) == (2, 5)
    assert policy_output_shapes(2, 5)[:2] == [("actions", [2]), ("action_logits", [5])]
    outputs = alloc_policy_output_tensors(_cfg(), info, rnn_size=7, device="cpu", share=False)
    # 2 workers, 2 splits, 2 envs per split x 3 agents
    assert outputs["actions"].shape == (2, 2, 6, 2) and outputs["actions"].dtype == torch.int64
    assert outputs["values"].shape == (2, 2, 6) and outputs["new_rnn_states"].shape == (2, 2, 6, 7)
    assert outputs["policy_version"].dtype == torch.int64


def test_trajectory_tensors_and_buffer_manager() -> None:
    info = _env_info(gym.spaces.Box(-1, 1, (2,), np.float32), num_agents=1)
    traj = alloc_trajectory_tensors(info, num_traj=3, rollout=4, rnn_size=6, device="cpu", share=False)
    assert traj["obs"]["obs"].shape == (3, 5, 5) and traj["rnn_states"].shape == (3, 5, 6)
    assert traj["actions"].shape == (3, 4, 2) and traj["action_logits"].shape == (3, 4, 4)
    cfg = _cfg()
    buffers = BufferMgr(cfg, info)
    assert buffers.trajectories_per_batch == 12 and buffers.total_num_trajectories >= 8
    (device, slots), = buffers.traj_tensors_torch.items()  # fmt: skip
    assert device == torch.device("cpu") and slots["rewards"].shape == (buffers.total_num_trajectories, 8)
    owners = [buffers.slot_owners.owner(s) for s in range(buffers.total_num_trajectories)]
    assert set(owners) == {0, 1}
    assert policy_device(cfg, 0) == torch.device("cpu")


def test_prepare_and_normalize_obs_converts_arrays_for_the_model() -> None:
    cfg = _cfg(normalize_input=False, obs_subtract_mean=0.0, obs_scale=1.0)
    model = create_actor_critic(cfg, gym.spaces.Box(0, 255, (5,), np.uint8), gym.spaces.Discrete(2))
    raw = np.arange(10, dtype=np.uint8).reshape(2, 5)
    obs = prepare_and_normalize_obs(model, raw)
    assert obs["obs"].dtype == torch.float32 and obs["obs"].tolist() == raw.astype(np.float32).tolist()
    assert raw.dtype == np.uint8, "the caller's array is left alone"
