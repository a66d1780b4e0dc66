"""The env adapters at Sample Factory 2's ``algo.utils.make_env`` path: what each one hands the sampler."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.algo.utils.context import reset_global_context
from sample_factory.algo.utils.make_env import (
    BatchedDictObservationsWrapper,
    BatchedListToDictWrapper,
    BatchedMultiAgentWrapper,
    NonBatchedDictObservationsWrapper,
    NonBatchedMultiAgentWrapper,
    NonBatchedVecEnv,
    make_env_func_non_batched,
)
from sample_factory.envs.env_utils import register_env
from sample_factory.utils.attr_dict import AttrDict


class Countdown(gym.Env):
    """Single agent: the observation counts the steps left; the episode ends after ``length`` steps."""

    observation_space = gym.spaces.Box(0.0, 10.0, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int = 2) -> None:
        self.length = length
        self.left = length
        self.closed = False

    def reset(self, seed=None, options=None):
        self.left = self.length
        return np.array([self.left], dtype=np.float32), {"reset": True}

    def step(self, action):
        self.left -= 1
        return np.array([self.left], dtype=np.float32), float(action), self.left == 0, False, {"action": int(action)}

    def close(self):
        self.closed = True


class TwoAgentsArrays(gym.Env):
    """Multi-agent, numpy outputs: observations [2, 3], rewards and flags as arrays, one info dict."""

    num_agents = 2
    is_multiagent = True
    observation_space = gym.spaces.Box(0.0, 1.0, shape=(3,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        return np.zeros((2, 3), dtype=np.float32), {}

    def step(self, actions):
        obs = np.stack([np.full(3, a, dtype=np.float32) for a in actions])
        return obs, np.asarray(actions, dtype=np.float32), np.zeros(2, bool), np.zeros(2, bool), {"t": 1}


def test_non_batched_single_agent_becomes_a_list_of_one_and_resets_on_the_spot() -> None:
    env = NonBatchedMultiAgentWrapper(Countdown(length=2))
    assert (env.num_agents, env.is_multiagent) == (1, True)
    obs, infos = env.reset()
    assert obs[0].tolist() == [2.0] and infos == [{"reset": True}]
    env.step([1])
    obs, rewards, terminated, truncated, infos = env.step([1])
    assert terminated == [True] and rewards == [1.0] and infos == [{"action": 1}]
    assert obs[0].tolist() == [2.0], "the observation after the last step is the next episode's first"
    with pytest.raises(ValueError, match="multi-agent"):
        NonBatchedMultiAgentWrapper(TwoAgentsArrays())


def test_non_batched_vec_env_gives_lists_of_dict_observations() -> None:
    env = NonBatchedVecEnv(NonBatchedDictObservationsWrapper(TwoAgentsArrays()))
    assert isinstance(env.observation_space, gym.spaces.Dict) and env.observation_space["obs"].shape == (3,)
    obs, infos = env.reset()
    assert len(obs) == 2 and obs[1]["obs"].shape == (3,) and infos == [{}, {}]
    obs, rewards, terminated, truncated, infos = env.step([0, 1])
    assert isinstance(rewards, list) and rewards == [0.0, 1.0]
    assert terminated == [False, False] and infos == [{"t": 1}, {"t": 1}]
    assert obs[1]["obs"].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="NonBatchedMultiAgentWrapper"):
        NonBatchedVecEnv(Countdown())


def test_make_env_func_non_batched_builds_the_whole_chain() -> None:
    reset_global_context()
    try:
        register_env("countdown_env", lambda *_: Countdown(length=3))
        env = make_env_func_non_batched(AttrDict(env="countdown_env"), env_config=None)
        assert type(env) is NonBatchedVecEnv and env.num_agents == 1
        obs, _ = env.reset()
        assert obs == [{"obs": np.array([3.0], dtype=np.float32)}]
        inner = env.env.env.env
        env.close()
        assert isinstance(inner, Countdown) and inner.closed
    finally:
        reset_global_context()


def test_batched_adapters() -> None:
    batched = BatchedMultiAgentWrapper(Countdown(length=1))
    assert batched.num_agents == 1 and isinstance(batched.env, Countdown)
    obs, _ = batched.reset()
    assert obs.shape == (1, 1)
    obs, rewards, terminated, _, _ = batched.step(np.array([1]))
    assert terminated.tolist() == [True] and rewards.tolist() == [1.0] and obs.tolist() == [[1.0]]

    as_dict = BatchedDictObservationsWrapper(TwoAgentsArrays())
    obs, _ = as_dict.reset()
    assert set(obs) == {"obs"} and obs["obs"].shape == (2, 3)
    assert as_dict.num_agents == 2

    class PerAgentDicts(TwoAgentsArrays):
        def reset(self, seed=None, options=None):
            return [{"a": np.ones(2), "b": np.zeros(1)}, {"a": np.zeros(2), "b": np.ones(1)}], {}

    obs, _ = BatchedListToDictWrapper(PerAgentDicts()).reset()
    assert obs["a"].tolist() == [[1.0, 1.0], [0.0, 0.0]] and obs["b"].tolist() == [[0.0], [1.0]]
