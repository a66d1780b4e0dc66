"""Env state as plain data (exact resume): round trips through weights-only checkpoints, and honest refusals."""

from __future__ import annotations

import io
import random
import threading

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.envs.env_state import (
    capture_env_state,
    capture_global_rng_states,
    restore_env_state,
    restore_global_rng_states,
)


def _through_checkpoint(state):
    """What a resumed run reads back: saved and loaded the way checkpoints are (no pickled objects)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def _rollout(env, actions):
    return [env.step(a)[:3] for a in actions]


@pytest.mark.filterwarnings("ignore:.*already returned terminated")
@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "Acrobot-v1"])
def test_classic_control_env_continues_identically_after_restore(env_id: str) -> None:
    env = gym.make(env_id)
    env.reset(seed=3)
    actions = [env.action_space.sample() for _ in range(20)]
    _rollout(env, actions[:5])
    state, reason = capture_env_state(env)
    assert state is not None, reason
    state = _through_checkpoint(state)
    expected = _rollout(env, actions[5:]) + [env.reset()[0]]  # reset draws from the env's generator too

    other = gym.make(env_id)
    other.reset(seed=99)  # a different episode and generator state before the restore
    restore_env_state(other, state)
    got = _rollout(other, actions[5:]) + [other.reset()[0]]
    for (obs_a, rew_a, term_a), (obs_b, rew_b, term_b) in zip(expected[:-1], got[:-1], strict=True):
        assert np.array_equal(obs_a, obs_b) and rew_a == rew_b and term_a == term_b
    assert np.array_equal(expected[-1], got[-1])


class _SimulatorHandleEnv(gym.Env):
    """An env holding an object that is not plain data (like a simulator or window handle)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.handle = threading.Lock()
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, dtype=np.float32), 0.0, False, False, {}


class _OwnStateEnv(_SimulatorHandleEnv):
    """The same env declaring its state itself: the handle is re-creatable, ``t`` is the state."""

    def get_state(self) -> dict:
        return {"t": self.t}

    def set_state(self, state: dict) -> None:
        self.t = state["t"]


def test_env_with_unsavable_attribute_is_refused_with_the_reason() -> None:
    state, reason = capture_env_state(_SimulatorHandleEnv())
    assert state is None
    assert "_SimulatorHandleEnv.handle" in reason and "get_state()/set_state()" in reason


def test_array_without_a_tensor_form_is_refused() -> None:
    env = _SimulatorHandleEnv()
    del env.handle
    env.names = np.array(["left", "right"])
    state, reason = capture_env_state(env)
    assert state is None and "_SimulatorHandleEnv.names" in reason


def test_env_methods_take_precedence_even_under_wrappers() -> None:
    env = gym.wrappers.TimeLimit(_OwnStateEnv(), max_episode_steps=10)
    env.unwrapped.t = 7
    state, _ = capture_env_state(env)
    other = gym.wrappers.TimeLimit(_OwnStateEnv(), max_episode_steps=10)
    restore_env_state(other, _through_checkpoint(state))
    assert other.unwrapped.t == 7


def test_restore_into_a_differently_wrapped_env_is_an_error() -> None:
    state, _ = capture_env_state(gym.make("CartPole-v1"))
    bare = gym.make("CartPole-v1").unwrapped
    with pytest.raises(ValueError, match="wrappers"):
        restore_env_state(bare, state)


def test_numpy_scalars_keep_their_type() -> None:
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    env.extra = (np.float32(1.5), np.int64(3), [np.arange(3, dtype=np.int16)], {"k": None}, np.float64(0.25))
    state, _ = capture_env_state(env)
    env.extra = None
    restore_env_state(env, _through_checkpoint(state))
    scalar, integer, (array,), mapping, double = env.extra
    assert type(scalar) is np.float32 and scalar == np.float32(1.5) and type(double) is np.float64
    assert type(integer) is np.int64 and array.dtype == np.int16 and mapping == {"k": None}


def test_global_generators_round_trip() -> None:
    state = _through_checkpoint(capture_global_rng_states())
    expected = torch.rand(3), np.random.rand(3), random.random()
    torch.manual_seed(123), np.random.seed(123), random.seed(123)
    restore_global_rng_states(state)
    got = torch.rand(3), np.random.rand(3), random.random()
    assert torch.equal(expected[0], got[0]) and np.array_equal(expected[1], got[1]) and expected[2] == got[2]


def test_arrays_of_a_dtype_this_torch_has_no_tensor_for_round_trip_as_bytes(monkeypatch) -> None:
    """Before torch 2.3 ``torch.from_numpy`` refuses unsigned 16-64 bit arrays (numpy's global generator keys are
    uint32): they are kept as bytes (made so here on a torch that has those tensors)."""
    from_numpy = torch.from_numpy

    def old_from_numpy(array):
        if array.dtype in (np.uint16, np.uint32, np.uint64):
            raise TypeError(f"can't convert np.ndarray of type numpy.{array.dtype}")
        return from_numpy(array)

    monkeypatch.setattr(torch, "from_numpy", old_from_numpy)
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    env.extra = [np.arange(12, dtype=np.uint32).reshape(3, 4)[:, ::2], np.array(7, dtype=np.uint64)]
    state, reason = capture_env_state(env)
    assert state is not None, reason
    generators = capture_global_rng_states()
    monkeypatch.undo()
    env.extra = None
    restore_env_state(env, _through_checkpoint(state))
    strided, scalar = env.extra
    assert strided.dtype == np.uint32 and np.array_equal(strided, np.arange(12).reshape(3, 4)[:, ::2])
    assert scalar.dtype == np.uint64 and scalar.shape == () and scalar == 7
    expected = np.random.rand(3)
    np.random.seed(5)
    restore_global_rng_states(_through_checkpoint(generators))
    assert np.array_equal(np.random.rand(3), expected)


def test_arrays_stored_as_tensors_of_their_values_by_earlier_versions_still_restore() -> None:
    state = capture_global_rng_states()
    entry = state["numpy"]["items"]["state"]["items"]["key"]  # numpy's MT19937 key, an array of uint32
    keys = np.random.get_state()[1]
    entry.pop("shape", None)
    entry["data"] = torch.from_numpy(keys.astype(np.int64))  # the earlier layout: the values in a tensor
    expected = np.random.rand(3)
    np.random.seed(5)
    restore_global_rng_states(_through_checkpoint(state))
    assert np.array_equal(np.random.rand(3), expected)
