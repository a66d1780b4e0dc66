"""What the system needs to know about an env before allocating buffers and models.

The runner creates one env, reads it into a small picklable ``EnvInfo`` and
closes it (``algo/runners/setup.py``); every process then gets the EnvInfo.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym

from sample_factory.envs.env_utils import RewardShapingInterface, find_wrapper_interface
from sample_factory.utils.typing import Config


@dataclass
class EnvInfo:
    obs_space: gym.Space
    action_space: gym.Space
    num_agents: int
    is_multiagent: bool
    frameskip: int
    reward_shaping_scheme: dict | None
    gpu_actions: bool = False
    gpu_observations: bool = False


def is_multiagent_env(env) -> bool:
    return bool(getattr(env, "is_multiagent", False)) or getattr(env, "num_agents", 1) > 1


def extract_env_info(env, cfg: Config) -> EnvInfo:
    shaping = find_wrapper_interface(env, RewardShapingInterface)
    return EnvInfo(
        obs_space=env.observation_space,
        action_space=env.action_space,
        num_agents=int(getattr(env, "num_agents", 1)),
        is_multiagent=is_multiagent_env(env),
        frameskip=int(getattr(cfg, "env_frameskip", 1) or 1),
        reward_shaping_scheme=shaping.get_default_reward_shaping() if shaping is not None else None,
        gpu_actions=bool(getattr(cfg, "env_gpu_actions", False)) and bool(getattr(cfg, "batched_sampling", False)),
        gpu_observations=bool(getattr(cfg, "env_gpu_observations", True))
        and bool(getattr(cfg, "batched_sampling", False)),
    )
