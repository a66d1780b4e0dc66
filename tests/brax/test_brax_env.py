"""BraxEnv on a tiny pure-jax env: batching, termination, truncation, resets, clamping, zero-copy outputs and its
saved state; jax_to_torch/torch_to_jax."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from brax_marks import needs_brax

from sample_factory.envs.make_env import BatchedVecEnv, is_natively_vectorized

pytestmark = needs_brax


def make(num: int = 4, threshold: float = 1.25, **kwargs):
    from toy_brax_env import ToyEnv

    from sf_examples.brax.brax_env import BraxEnv

    return BraxEnv(ToyEnv(threshold), num, **{"seed": 0, **kwargs})


def test_jax_to_torch_shares_memory_and_round_trips() -> None:
    import jax.numpy as jnp

    from sf_examples.brax.brax_env import jax_to_torch, torch_to_jax

    array = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    tensor = jax_to_torch(array)
    assert tensor.dtype == torch.float32 and tensor.shape == (2, 3)
    assert tensor.data_ptr() == array.unsafe_buffer_pointer()  # no copy
    assert tensor.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    back = torch_to_jax(torch.tensor([[1.5, -2.0]]))
    assert back.shape == (1, 2) and np.allclose(np.asarray(back), [[1.5, -2.0]])
    flags = jax_to_torch(jnp.array([True, False]))
    assert flags.dtype == torch.bool and flags.tolist() == [True, False]
    assert jax_to_torch(tensor) is tensor  # torch tensors pass through


def test_spaces_and_the_batched_sampler_protocol() -> None:
    env = make(5)
    assert env.num_agents == 5 and env.is_multiagent
    assert env.observation_space.shape == (2,) and env.action_space.shape == (1,)
    assert is_natively_vectorized(env)  # stepped as it is, not one copy at a time
    batched = BatchedVecEnv(env)
    obs, _ = batched.reset(seed=3)
    assert obs["obs"].shape == (5, 2)
    obs, rewards, terminated, truncated, infos = batched.step(np.full((5, 1), 0.5, dtype=np.float32))
    assert rewards.shape == terminated.shape == truncated.shape == (5,)
    assert infos == [{}] * 5


def test_reset_is_random_per_copy_and_seeded() -> None:
    env = make(8)
    first = env.reset(seed=7)[0].clone()
    assert first[:, 1].tolist() == [0.0] * 8
    assert len(set(first[:, 0].tolist())) == 8 and first[:, 0].abs().max() <= 0.1
    assert torch.equal(env.reset(seed=7)[0], first)
    assert not torch.equal(env.reset(seed=8)[0], first)


def test_terminated_copies_restart_at_once() -> None:
    env = make(3)
    env.reset(seed=1)
    actions = np.array([[0.5], [0.5], [0.0]], dtype=np.float32)
    for _ in range(2):
        obs, rewards, terminated, truncated, _ = env.step(actions)
        assert not terminated.any()
    obs, rewards, terminated, truncated, _ = env.step(actions)
    assert terminated.tolist() == [True, True, False] and not truncated.any()
    assert rewards[:2].min() > 1.25  # the reward of the step that ended the episode
    # the finished copies already show their next episode's first observation
    assert obs[:2, 1].tolist() == [0.0, 0.0] and obs[:2, 0].abs().max() <= 0.1
    assert obs[2, 1].item() == 3.0


def test_episodes_are_truncated_at_the_episode_length() -> None:
    env = make(2, episode_length=4)
    env.reset(seed=0)
    still = np.zeros((2, 1), dtype=np.float32)
    flags = []
    for _ in range(9):
        obs, _, terminated, truncated, _ = env.step(still)
        flags.append((terminated.tolist(), truncated.tolist(), obs[0, 1].item()))
    assert [f[1] for f in flags] == [[False] * 2] * 3 + [[True] * 2] + [[False] * 2] * 3 + [[True] * 2] + [[False] * 2]
    assert all(f[0] == [False, False] for f in flags)
    assert [f[2] for f in flags] == [1, 2, 3, 0, 1, 2, 3, 0, 1]


def test_termination_on_the_last_step_is_not_a_truncation() -> None:
    env = make(1, episode_length=3)
    env.reset(seed=0)
    for _ in range(2):
        env.step([[0.5]])
    _, _, terminated, truncated, _ = env.step([[0.5]])
    assert terminated.tolist() == [True] and truncated.tolist() == [False]


def test_clamping() -> None:
    raw = make(1, threshold=1e9)
    raw.reset(seed=0)
    obs, reward, *_ = raw.step(np.array([[500.0]], dtype=np.float32))
    assert obs[0, 0].item() > 499 and reward.item() > 499
    clamped = make(1, threshold=1e9, clamp_rew_obs=True)
    clamped.reset(seed=0)
    obs, reward, *_ = clamped.step(np.array([[500.0]], dtype=np.float32))
    assert obs[0, 0].item() == 100.0 and reward.item() == 100.0
    actions_clamped = make(1, threshold=1e9, clamp_actions=True)
    actions_clamped.reset(seed=0)
    obs, *_ = actions_clamped.step(torch.tensor([[500.0]]))
    assert 0.9 <= obs[0, 0].item() <= 1.1


def test_actions_as_tensor_array_or_rows_agree() -> None:
    results = []
    for actions in (torch.full((2, 1), 0.25), np.full((2, 1), 0.25), [np.array([0.25]), np.array([0.25])]):
        env = make(2)
        env.reset(seed=4)
        results.append(env.step(actions)[0].clone())
    assert torch.equal(results[0], results[1]) and torch.equal(results[0], results[2])


def test_bad_input_is_a_clear_error() -> None:
    from brax.envs.wrappers.training import VmapWrapper
    from toy_brax_env import ToyEnv

    from sf_examples.brax.brax_env import BraxEnv

    with pytest.raises(ValueError, match="--env_agents"):
        make(0)
    with pytest.raises(ValueError, match="unwrapped"):
        BraxEnv(VmapWrapper(ToyEnv(), 4), 4)
    env = make(2)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(np.zeros((2, 1)))
    env.reset()
    with pytest.raises(ValueError, match=r"expected \(2, 1\)"):
        env.step(np.zeros((3, 1)))


def test_saved_state_continues_exactly() -> None:
    env = make(3)
    env.reset(seed=2)
    for _ in range(2):
        env.step(np.full((3, 1), 0.3, dtype=np.float32))
    state = env.get_state()
    assert all(isinstance(leaf, torch.Tensor) for leaf in state["leaves"])
    actions = np.array([[0.9], [0.1], [-0.4]], dtype=np.float32)
    expected = [t.clone() for t in env.step(actions)[:4]]
    other = make(3, seed=99)
    other.set_state(state)
    got = other.step(actions)[:4]
    assert all(torch.equal(a, b) for a, b in zip(expected, got, strict=True))
    with pytest.raises(ValueError, match="--env_agents"):
        make(4).set_state(state)


def test_no_frames_without_a_render_mode() -> None:
    env = make(2)
    env.reset()
    assert env.render() is None
    with pytest.raises(ValueError, match="render_mode"):
        make(2, render_mode="window")
