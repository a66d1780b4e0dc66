"""What the system needs to know about an env before allocating buffers and models.

The env is created once in a short-lived child process (so that a simulator's
global state, threads or GPU context never leak into the runner), queried, and
closed; the answer is a small picklable ``EnvInfo``.
"""

from __future__ import annotations

import multiprocessing
import traceback
from dataclasses import dataclass

import gymnasium as gym

from sample_factory.envs.create_env import create_env
from sample_factory.envs.env_utils import RewardShapingInterface, find_wrapper_interface
from sample_factory.utils.attr_dict import AttrDict
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


def _env_info_child(cfg: Config, sf_context, result_queue) -> None:
    from sample_factory.algo.utils.context import set_global_context

    set_global_context(sf_context)
    try:
        env = create_env(cfg.env, cfg=cfg, env_config=AttrDict(worker_index=-1, vector_index=-1, env_id=-1))
        info = extract_env_info(env, cfg)
        env.close()
        result_queue.put(("ok", info))
    except BaseException:  # reported to the parent, which raises with the child's traceback
        result_queue.put(("error", traceback.format_exc()))


def obtain_env_info_in_a_separate_process(cfg: Config) -> EnvInfo:
    """Create the env in a spawned child, read its spaces, close it. Raises with the child's traceback."""
    from sample_factory.algo.utils.context import sf_global_context

    ctx = multiprocessing.get_context("spawn")
    result_queue = ctx.Queue()
    proc = ctx.Process(target=_env_info_child, args=(cfg, sf_global_context(), result_queue), daemon=True)
    proc.start()
    try:
        status, payload = result_queue.get(timeout=max(60, int(getattr(cfg, "reset_timeout_seconds", 120))))
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if status != "ok":
        raise RuntimeError(f"Could not create env {cfg.env!r} to read its spaces:\n{payload}")
    return payload
