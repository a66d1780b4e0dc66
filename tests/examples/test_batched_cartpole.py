"""The numpy-vectorised CartPole: same dynamics as Gymnasium's CartPole-v1, auto-reset, batched-sampling training."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from example_helpers import assert_trained, run_module, train_args

from sf_examples.batched_cartpole import MAX_EPISODE_STEPS, BatchedCartPole

TRAIN = "sf_examples.train_batched_cartpole"


def test_dynamics_match_gymnasium_cartpole() -> None:
    """Start both from the same state, apply the same actions: observations and termination must agree."""
    reference = gym.make("CartPole-v1")
    ref_obs, _ = reference.reset(seed=5)
    env = BatchedCartPole(num_envs=3)
    env.reset(seed=0)
    env.state[:] = np.asarray(reference.unwrapped.state, dtype=np.float64)
    rng = np.random.default_rng(0)
    for _ in range(200):
        action = int(rng.integers(2))
        ref_obs, ref_reward, ref_terminated, _, _ = reference.step(action)
        if ref_terminated:
            break
        obs, rewards, terminated, truncated, _ = env.step(np.full(3, action))
        np.testing.assert_allclose(obs, np.tile(ref_obs, (3, 1)), rtol=1e-5, atol=1e-6)
        assert rewards.tolist() == [ref_reward] * 3 and not terminated.any() and not truncated.any()
    assert ref_terminated, "a random policy should drop the pole within 200 steps"
    _, rewards, terminated, _, _ = env.step(np.full(3, action))
    assert terminated.all() and rewards.tolist() == [1.0] * 3


def test_time_limit_truncates_and_auto_resets() -> None:
    env = BatchedCartPole(num_envs=4)
    env.reset(seed=1)
    env.elapsed[:] = [MAX_EPISODE_STEPS - 1, 0, 0, 0]
    obs, _, terminated, truncated, _ = env.step(torch.tensor([0, 1, 0, 1]))  # tensors are accepted as actions
    assert truncated.tolist() == [True, False, False, False] and not terminated.any()
    assert env.elapsed.tolist() == [0, 1, 1, 1]
    assert obs.dtype == np.float32 and obs.shape == (4, 4)
    assert np.all(np.abs(obs[0]) <= 0.05), "the truncated copy returns the first observation of its next episode"


def test_actions_of_shape_n_by_1_are_accepted() -> None:
    env = BatchedCartPole(num_envs=2)
    env.reset(seed=2)
    obs, *_ = env.step(torch.zeros(2, 1, dtype=torch.int64))
    assert obs.shape == (2, 4)


def test_train_serial_batched(tmp_path: Path) -> None:
    args = train_args(tmp_path, "batched_serial", "--serial_mode=True", "--num_workers=1", steps=10000)
    assert_trained(run_module(TRAIN, *args, "--batched_sampling=True", "--batched_envs=32"))


def test_train_parallel_batched(tmp_path: Path) -> None:
    args = train_args(tmp_path, "batched_parallel", "--num_workers=2", steps=10000)
    result = run_module(TRAIN, *args, "--batched_sampling=True", "--batched_envs=32")
    assert_trained(result)
    assert list((tmp_path / "batched_parallel" / "checkpoint_p0").glob("checkpoint_*.pth"))
