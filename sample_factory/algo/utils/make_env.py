"""Sample Factory 2's module path for making envs in the shape the samplers step them.

The batched side lives in :mod:`sample_factory.envs.make_env` (``make_env_func_batched``, ``BatchedVecEnv``,
``SequentialVectorizeWrapper``); the multi-agent protocol attributes are read by ``sample_factory.envs.env_info``
(through any chain of wrappers). This module adds the small adapters Sample Factory 2 scripts import by name:

- non-batched: ``make_env_func_non_batched`` gives any env the per-agent list protocol (``NonBatchedVecEnv``):
  ``reset() -> (obs, infos)`` and ``step(actions) -> (obs, rewards, terminated, truncated, infos)``, each a list with
  one entry per agent, every observation a dict (key ``"obs"`` for a non-dict observation space), agents reset
  by the env (a single-agent env is reset on the spot by ``NonBatchedMultiAgentWrapper``);
- batched: ``BatchedMultiAgentWrapper`` (a single-agent env as a batch of one), ``BatchedDictObservationsWrapper``
  (array observations as ``{"obs": array}``) and ``BatchedListToDictWrapper`` (per-agent dicts stacked into one
  dict of arrays).

Each adapter keeps the env it wraps as ``.env``, so attributes of the user's env stay reachable.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.create_env import create_env
from sample_factory.envs.env_info import env_attribute, get_multiagent_info, is_multiagent_env
from sample_factory.envs.make_env import (
    BatchedVecEnv,
    SequentialVectorizeWrapper,
    is_natively_vectorized,
    make_env_func_batched,
)
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config

__all__ = [
    "BatchedDictObservationsWrapper",
    "BatchedListToDictWrapper",
    "BatchedMultiAgentWrapper",
    "BatchedVecEnv",
    "NonBatchedDictObservationsWrapper",
    "NonBatchedMultiAgentWrapper",
    "NonBatchedVecEnv",
    "SequentialVectorizeWrapper",
    "get_multiagent_info",
    "is_multiagent_env",
    "is_natively_vectorized",
    "make_env_func_batched",
    "make_env_func_non_batched",
]

OBS_KEY = "obs"


def _is_dict_space(space: Any) -> bool:
    return isinstance(getattr(space, "spaces", None), dict)


class _EnvAdapter:
    """Passes everything through to ``env``; subclasses change what they adapt. Not a ``gymnasium.Wrapper``, so it
    also wraps envs that are no ``gymnasium.Env``."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        self.render_mode = env_attribute(env, "render_mode", None)
        self.is_multiagent, self.num_agents = get_multiagent_info(env)

    @property
    def unwrapped(self) -> Any:
        return env_attribute(self.env, "unwrapped", self.env)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, Any]:
        return self.env.reset(seed=seed, **({} if options is None else {"options": options}))

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any]:
        return self.env.step(actions)

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class NonBatchedMultiAgentWrapper(_EnvAdapter):
    """A single-agent env as a multi-agent env of one agent: lists of one, and a new episode started on the spot
    when one ends (the step's info is the one of the finished episode, its observation the new episode's first)."""

    def __init__(self, env: Any) -> None:
        if is_multiagent_env(env):
            raise ValueError(
                f"NonBatchedMultiAgentWrapper wraps single-agent envs, but {type(env).__name__} is multi-agent "
                f"(num_agents={get_multiagent_info(env)[1]}): use it as it is"
            )
        super().__init__(env)
        self.is_multiagent, self.num_agents = True, 1

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[list, list]:
        obs, info = super().reset(seed, options)
        return [obs], [info]

    def step(self, actions: Any) -> tuple[list, list, list, list, list]:
        obs, reward, terminated, truncated, info = self.env.step(actions[0])
        if terminated or truncated:
            obs, _ = self.env.reset()
        return [obs], [reward], [terminated], [truncated], [info]


class NonBatchedDictObservationsWrapper(_EnvAdapter):
    """A multi-agent env with array observations, each agent's observation given as ``{"obs": array}``."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        if not _is_dict_space(self.observation_space):
            self.observation_space = gym.spaces.Dict({OBS_KEY: env.observation_space})

    def _dicts(self, obs: Any) -> list:
        return [agent_obs if isinstance(agent_obs, dict) else {OBS_KEY: agent_obs} for agent_obs in obs]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[list, Any]:
        obs, infos = super().reset(seed, options)
        return self._dicts(obs), infos

    def step(self, actions: Any) -> tuple[list, Any, Any, Any, Any]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return self._dicts(obs), rewards, terminated, truncated, infos


class NonBatchedVecEnv(_EnvAdapter):
    """The outer layer of a non-batched env: every output is a list with one entry per agent.

    Arrays (per-agent rewards or flags as one numpy array) become lists; a single info dict is given to every agent.
    """

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        if not self.is_multiagent:
            raise ValueError(
                f"NonBatchedVecEnv needs a multi-agent env, got {type(env).__name__} (single-agent): wrap it in "
                "NonBatchedMultiAgentWrapper first, or build it with make_env_func_non_batched"
            )

    def _per_agent(self, value: Any) -> list:
        if isinstance(value, dict):
            return [value] * self.num_agents
        return list(value)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[list, list]:
        obs, infos = super().reset(seed, options)
        return list(obs), self._per_agent(infos)

    def step(self, actions: Any) -> tuple[list, list, list, list, list]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return list(obs), list(rewards), list(terminated), list(truncated), self._per_agent(infos)


def make_env_func_non_batched(cfg: Config, env_config: AttrDict | None, render_mode: str | None = None) -> Any:
    """Create ``cfg.env`` and give it the non-batched multi-agent protocol (see the module docstring)."""
    env = create_env(cfg.env, cfg=cfg, env_config=env_config, render_mode=render_mode)
    try:
        if not is_multiagent_env(env):
            env = NonBatchedMultiAgentWrapper(env)
        if not _is_dict_space(env.observation_space):
            env = NonBatchedDictObservationsWrapper(env)
        return NonBatchedVecEnv(env)
    except BaseException:
        env.close()
        raise


class BatchedMultiAgentWrapper(SequentialVectorizeWrapper):
    """A single-agent env as a batch of one agent: stacked arrays ``[1, ...]``, reset on the spot when done."""

    def __init__(self, env: Any) -> None:
        super().__init__([env])
        self.env = env


class BatchedDictObservationsWrapper(_EnvAdapter):
    """A batched env whose observations are one array ``[num_agents, ...]``, giving them as ``{"obs": array}``."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        if not _is_dict_space(self.observation_space):
            self.observation_space = gym.spaces.Dict({OBS_KEY: env.observation_space})

    def reset(self, seed: Any = None, options: dict | None = None) -> tuple[Any, Any]:
        obs, infos = super().reset(seed, options)
        return (obs if isinstance(obs, dict) else {OBS_KEY: obs}), infos

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return (obs if isinstance(obs, dict) else {OBS_KEY: obs}), rewards, terminated, truncated, infos


class BatchedListToDictWrapper(_EnvAdapter):
    """A batched env returning one observation dict per agent, giving one dict of stacked arrays instead."""

    @staticmethod
    def _stacked(obs: Any) -> Any:
        if isinstance(obs, dict):
            return obs
        return {key: np.stack([agent_obs[key] for agent_obs in obs]) for key in obs[0]}

    def reset(self, seed: Any = None, options: dict | None = None) -> tuple[Any, Any]:
        obs, infos = super().reset(seed, options)
        return self._stacked(obs), infos

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return self._stacked(obs), rewards, terminated, truncated, infos
