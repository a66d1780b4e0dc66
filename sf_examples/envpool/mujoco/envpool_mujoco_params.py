"""The EnvPool MuJoCo envs (``envpool_mujoco_<task>``, Sample Factory 2's MuJoCo names) and their defaults.

Watching (``render_mode`` set) runs Gymnasium's copy of the same ``-v5`` task instead of EnvPool: EnvPool's MuJoCo
renderer needs an OpenGL context it does not create itself, so on a headless machine it aborts the process, while
Gymnasium's renders through EGL (``MUJOCO_GL=egl``, set here unless already set). Both implement the same task with
the same observation and action spaces, so the policy drives either.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import require_optional_module
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sf_examples.envpool.envpool_utils import BATCHED_DEFAULTS, add_envpool_args, make_batched_env
from sf_examples.envpool.envpool_wrappers import EnvPoolBatchedEnv, float32_space

PREFIX = "envpool_mujoco_"
# env name -> EnvPool (and Gymnasium) task id
ENVPOOL_MUJOCO_ENVS: dict[str, str] = {
    PREFIX + "ant": "Ant-v5",
    PREFIX + "halfcheetah": "HalfCheetah-v5",
    PREFIX + "hopper": "Hopper-v5",
    PREFIX + "humanoid": "Humanoid-v5",
    PREFIX + "standup": "HumanoidStandup-v5",
    PREFIX + "doublependulum": "InvertedDoublePendulum-v5",
    PREFIX + "pendulum": "InvertedPendulum-v5",
    PREFIX + "reacher": "Reacher-v5",
    PREFIX + "walker": "Walker2d-v5",
    PREFIX + "pusher": "Pusher-v5",
    PREFIX + "swimmer": "Swimmer-v5",
}

# Sample Factory 2.1.1's EnvPool MuJoCo defaults, value for value (tests/envs/test_family_defaults.py holds them to
# it): one serial, synchronous worker whose pool of --env_agents (64) envs collects 64-step rollouts, 4096 samples
# per round = one batch of 2 minibatches of 2048, 4 epochs; a KL-adaptive learning rate and a KL penalty. The
# command line still wins.
ENVPOOL_MUJOCO_DEFAULTS: dict[str, Any] = {
    **BATCHED_DEFAULTS,
    "serial_mode": True,
    "async_rl": False,
    "num_workers": 1,
    "train_for_env_steps": 10_000_000,
    "rollout": 64,
    "batch_size": 2048,
    "num_batches_per_epoch": 2,
    "num_epochs": 4,
    "shuffle_minibatches": False,
    "learning_rate": 3e-4,
    "lr_schedule": "kl_adaptive_epoch",
    "lr_schedule_kl_threshold": 0.008,
    "kl_loss_coeff": 0.1,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "with_vtrace": False,
    "ppo_clip_ratio": 0.2,
    "value_loss_coeff": 2.0,
    "exploration_loss_coeff": 0.0,
    "max_grad_norm": 1.0,
    "reward_scale": 0.1,
    # time-limit truncations are bootstrapped from the value of the last state, not treated as deaths
    "value_bootstrap": True,
    "encoder_mlp_layers": [256, 128, 64],
    "nonlinearity": "elu",
    "policy_initialization": "torch_default",
    "use_rnn": False,
    "recurrence": 1,
    "normalize_input": True,
    "normalize_returns": True,
    "adaptive_stddev": False,
    "experiment_summaries_interval": 15,
    "save_every_sec": 15,
    "save_best_every_sec": 15,
}


def envpool_mujoco_override_defaults(env_name: str, parser: argparse.ArgumentParser) -> None:
    """The family's defaults (``ENVPOOL_MUJOCO_DEFAULTS``), the same for every task."""
    del env_name
    parser.set_defaults(**ENVPOOL_MUJOCO_DEFAULTS)


def add_mujoco_envpool_env_args(env: str | None, parser: argparse.ArgumentParser, evaluation: bool = False) -> None:
    """Sample Factory 2's name for the family's flags: the EnvPool flags (``--env_agents``, threads)."""
    del evaluation  # the same flags for training and watching
    add_envpool_args(env, parser)


def mujoco_envpool_override_defaults(env: str | None, parser: argparse.ArgumentParser) -> None:
    """Sample Factory 2's name for :func:`envpool_mujoco_override_defaults`."""
    envpool_mujoco_override_defaults(env, parser)


class GymnasiumTaskForWatching(gym.Wrapper):
    """Gymnasium's copy of the task as a one-agent env with EnvPool's float32 observations, for rendering."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = float32_space(env.observation_space)

    def _obs(self, obs: Any) -> np.ndarray:
        return np.asarray(obs, dtype=self.observation_space.dtype)

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        return self._obs(obs), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._obs(obs), reward, terminated, truncated, info


def make_watchable_env(task_id: str, render_mode: str) -> gym.Env:
    os.environ.setdefault("MUJOCO_GL", "egl")
    require_optional_module("mujoco", extra="mujoco", what="Watching EnvPool MuJoCo policies (Gymnasium rendering)")
    return GymnasiumTaskForWatching(gym.make(task_id, render_mode=render_mode))


def make_envpool_mujoco_env(
    full_env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> EnvPoolBatchedEnv | gym.Env:
    """One EnvPool instance of ``--env_agents`` copies of the task, or Gymnasium's task when rendering."""
    task_id = ENVPOOL_MUJOCO_ENVS[full_env_name]
    if render_mode is not None:
        return make_watchable_env(task_id, render_mode)
    return make_batched_env(task_id, cfg, env_config, render_mode=None)
