"""Train on NVIDIA Isaac Gym tasks (IsaacGymEnvs): thousands of envs simulated on one GPU, stepped as one batch.

    python -m sf_examples.isaacgym_examples.train_isaacgym --env=Ant --train_for_env_steps=100000000 \
        --experiment=isaacgym_ant

Isaac Gym is not on PyPI. This module imports without it, so its names exist everywhere; making an env, registering
the tasks or running ``main`` raises an ImportError that names ``isaacgym`` and where to get it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import is_module_available, str2bool

ISAACGYM_PAGE = "https://developer.nvidia.com/isaac-gym"
ISAACGYMENVS_REPO = "https://github.com/isaac-sim/IsaacGymEnvs"
# the tasks of IsaacGymEnvs registered under their own names (--env=Ant)
ISAACGYM_TASKS = ("AllegroHand", "Ant", "Anymal", "AnymalTerrain", "BallBalance", "Cartpole", "Humanoid", "ShadowHand")

# Defaults for thousands of GPU envs in one process: one worker owns the whole batch, observations and actions stay
# on the GPU, and long rollouts of a feed-forward policy are split into a few large minibatches.
ISAACGYM_DEFAULTS: dict[str, Any] = {
    "batched_sampling": True,
    "num_workers": 1,
    "num_envs_per_worker": 1,
    "worker_num_splits": 1,
    "actor_worker_gpus": [0],
    "env_gpu_actions": True,
    "env_gpu_observations": True,
    "use_rnn": False,
    "rollout": 16,
    "batch_size": 32768,
    "num_epochs": 4,
    "normalize_input": True,
    "normalize_returns": True,
    "with_vtrace": False,
    "learning_rate": 3e-4,
    "save_every_sec": 120,
}


def require_isaacgym() -> Any:
    """The ``isaacgym`` module, or an ImportError naming it and NVIDIA's download page."""
    if not is_module_available("isaacgym"):
        raise ImportError(
            f"Isaac Gym tasks need NVIDIA's 'isaacgym' package, which is not on PyPI: download Isaac Gym Preview from "
            f"{ISAACGYM_PAGE}, pip install its python/ folder, then install IsaacGymEnvs ({ISAACGYMENVS_REPO}). "
            "Import isaacgym before torch in your own scripts."
        )
    import isaacgym

    return isaacgym


class IsaacGymVecEnv(gym.Env):
    """An IsaacGymEnvs task (``num_envs`` envs on the GPU) as a natively vectorised env: one agent per env.

    Observations come from ``isaacgym_env``'s observation dict under ``obs_key`` and are returned as ``{"obs": ...}``
    tensors on the task's device; ``info["time_outs"]`` of the task becomes ``truncated`` (the rest of ``dones`` is
    ``terminated``). The task resets finished envs itself.
    """

    is_multiagent = True

    def __init__(self, isaacgym_env: Any, obs_key: str = "obs") -> None:
        self.env = isaacgym_env
        self.obs_key = obs_key
        self.num_agents = int(isaacgym_env.num_envs)
        obs_space = isaacgym_env.observation_space
        self.observation_space = gym.spaces.Dict({"obs": gym.spaces.Box(-np.inf, np.inf, obs_space.shape, np.float32)})
        self.action_space = isaacgym_env.action_space
        self.render_mode = None

    def _obs(self, obs_dict: dict[str, Any]) -> dict[str, Any]:
        if self.obs_key not in obs_dict:
            raise KeyError(f"--obs_key={self.obs_key} is not among the task's observations {sorted(obs_dict)}")
        return {"obs": obs_dict[self.obs_key]}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict[str, Any], list[dict]]:
        del seed, options  # the task is seeded from its config when it is made
        return self._obs(self.env.reset()), [{} for _ in range(self.num_agents)]

    def step(self, actions: Any) -> tuple[dict[str, Any], Any, Any, Any, dict]:
        obs, rewards, dones, infos = self.env.step(actions)
        time_outs = infos.get("time_outs") if isinstance(infos, dict) else None
        dones = dones.bool()
        if time_outs is None:
            truncated = dones.new_zeros(dones.shape)
        else:
            truncated = time_outs.bool() & dones
        return self._obs(obs), rewards, dones & ~truncated, truncated, infos

    def close(self) -> None:
        close = getattr(self.env, "close", None)
        if close is not None:
            close()


def add_extra_params_func(parser: argparse.ArgumentParser) -> None:
    """Flags of the Isaac Gym tasks (saved in config.json, so enjoy rebuilds the same task)."""
    group = parser.add_argument_group("Isaac Gym", "Flags of the Isaac Gym tasks.")
    group.add_argument("--env_agents", type=int, default=-1, help="Envs simulated on the GPU; -1: the task's own.")
    group.add_argument("--obs_key", type=str, default="obs", help="Key of the task's observation dict to learn from.")
    group.add_argument("--env_headless", type=str2bool, default=True, help="Simulate without Isaac Gym's viewer.")


def override_default_params_func(env: str | None, parser: argparse.ArgumentParser) -> None:
    """Defaults for GPU-simulated tasks (``ISAACGYM_DEFAULTS``), the same for every task."""
    del env
    parser.set_defaults(**ISAACGYM_DEFAULTS)


def ige_task_cfg_overrides(task_name: str, cfg: Config) -> list[str]:
    """Hydra overrides of the IsaacGymEnvs task config that the run's flags imply (number of envs, seed, device)."""
    overrides = [f"task={task_name}", f"headless={bool(getattr(cfg, 'env_headless', True))}"]
    if int(getattr(cfg, "env_agents", -1)) > 0:
        overrides.append(f"num_envs={int(cfg.env_agents)}")
    if getattr(cfg, "seed", None) is not None:
        overrides.append(f"seed={int(cfg.seed)}")
    return overrides


def make_isaacgym_env(full_env_name: str, cfg: Config, _env_config: Any = None, render_mode: str | None = None):
    """The ``make_env_func`` of the Isaac Gym tasks: the IsaacGymEnvs task wrapped as :class:`IsaacGymVecEnv`."""
    require_isaacgym()
    import isaacgymenvs

    headless = bool(getattr(cfg, "env_headless", True)) and render_mode is None
    num_envs = int(getattr(cfg, "env_agents", -1))
    task = isaacgymenvs.make(
        seed=int(getattr(cfg, "seed", 0) or 0), task=full_env_name, num_envs=num_envs if num_envs > 0 else None,
        sim_device="cuda:0", rl_device="cuda:0", headless=headless,
    )  # fmt: skip
    return IsaacGymVecEnv(task, getattr(cfg, "obs_key", "obs"))


def register_isaacgym_custom_components() -> None:
    """Register every task of ``ISAACGYM_TASKS`` (ImportError naming isaacgym when it is not installed)."""
    require_isaacgym()
    for task in ISAACGYM_TASKS:
        register_env(task, make_isaacgym_env)


def parse_isaacgym_cfg(evaluation: bool = False) -> Config:
    """Standard flags, the Isaac Gym flags and defaults, then the strict final parse of the command line."""
    parser, partial_cfg = parse_sf_args(evaluation=evaluation)
    add_extra_params_func(parser)
    override_default_params_func(partial_cfg.env, parser)
    return parse_full_cfg(parser)


def main() -> StatusCode:
    register_isaacgym_custom_components()
    return run_rl(parse_isaacgym_cfg())


if __name__ == "__main__":
    sys.exit(main())
