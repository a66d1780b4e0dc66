"""Start a worker's envs at different points of their episodes (``--decorrelate_envs_on_one_worker``).

Envs created together reset together. With a fixed episode length (MuJoCo's 1000 steps, a time limit) they would
then end their episodes in the same rollout for ever after: every ``max_episode_steps / rollout`` batches the whole
batch would be episode starts, and the value function sees its targets jump for all samples at once (HalfCheetah:
the advantages' standard deviation rises two- to fourfold for a few batches after each such reset). Stepping env
``k`` of a worker (counted over all its splits) ``k * rollout`` times with random actions after its first reset
spreads the episode boundaries over the rollouts, as Sample Factory 2 does (it logs "Decorrelating experience for N
frames..." per env).

These steps happen before sampling begins: nothing of them is trained on, counted in the env steps or in the
episode statistics. They are taken once, when a worker creates its envs. A worker restarted after a crash takes
none: its envs already start out of step with the other workers' envs. A worker whose sampling state is restored
exactly takes them, and the restore then puts every env back where it was saved.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from sample_factory.envs.env_contract import CHECKED_STEPS
from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.typing import Config

StepCheck = Callable[[Any], tuple[Any, Any, Any, Any, Any]]


def decorrelation_steps(cfg: Config, env_index_in_worker: int) -> int:
    """Random steps env ``env_index_in_worker`` (over all splits of its worker) takes before sampling begins.

    0 with ``--decorrelate_envs_on_one_worker=False`` or ``--batched_sampling`` (a batched env steps all of its
    envs together, so they cannot be moved apart).
    """
    if not cfg.decorrelate_envs_on_one_worker or cfg.batched_sampling:
        return 0
    return env_index_in_worker * cfg.rollout


class RandomActions:
    """Random actions for one env's agents from copies of their action spaces, seeded for reproducible runs."""

    def __init__(self, env_info: EnvInfo, seed: int | None) -> None:
        self.multiagent = env_info.is_multiagent
        self.spaces: list[gym.Space] = []
        for agent in range(env_info.num_agents):
            space = copy.deepcopy(env_info.agent_spaces(agent)[1])  # a copy: the env's own space keeps its RNG
            space.seed(None if seed is None else seed + agent)
            self.spaces.append(space)

    def sample(self) -> Any:
        if self.multiagent:
            return [space.sample() for space in self.spaces]
        return self.spaces[0].sample()


def decorrelate(env: Any, obs: Any, num_steps: int, actions: RandomActions, check: StepCheck) -> Any:
    """Step a freshly reset ``env`` ``num_steps`` times with random actions; the observation to start sampling from.

    ``check`` validates the first steps' results (the env contract: a broken ``step()`` is reported here as it would
    be during sampling). A single-agent env whose episode ends is reset; multi-agent envs reset their agents
    themselves, as they do during sampling.
    """
    for step in range(num_steps):
        result = env.step(actions.sample())
        if step < CHECKED_STEPS:
            result = check(result)
        obs, _, terminated, truncated, _ = result
        if not actions.multiagent and (terminated or truncated):
            obs, _ = env.reset()
    return obs
