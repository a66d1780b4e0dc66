"""Sample Factory 2's names for the EnvPool MuJoCo envs: specs by name and the env factory.

Both spellings of a name work: Sample Factory 2's (``mujoco_ant``) and this family's (``envpool_mujoco_ant``).
"""

from __future__ import annotations

import gymnasium as gym

from sample_factory.envs.env_utils import UnknownEnvError, unknown_env_message
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sf_examples.envpool.envpool_utils import canonical_env_name
from sf_examples.envpool.envpool_wrappers import EnvPoolBatchedEnv
from sf_examples.envpool.mujoco.envpool_mujoco_params import ENVPOOL_MUJOCO_ENVS, PREFIX, make_envpool_mujoco_env
from sf_examples.mujoco.mujoco_utils import MujocoSpec


def _family_name(name: str) -> str:
    canonical = canonical_env_name(name, PREFIX, ENVPOOL_MUJOCO_ENVS)
    if canonical not in ENVPOOL_MUJOCO_ENVS:
        raise UnknownEnvError(unknown_env_message(name, sorted(ENVPOOL_MUJOCO_ENVS)))
    return canonical


def mujoco_env_by_name(name: str) -> MujocoSpec:
    """The spec of a task: this family's env name and the EnvPool task id it runs."""
    canonical = _family_name(name)
    return MujocoSpec(canonical, ENVPOOL_MUJOCO_ENVS[canonical])


def make_mujoco_env(
    env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> EnvPoolBatchedEnv | gym.Env:
    """One EnvPool instance of the task, or Gymnasium's task when rendering (see ``make_envpool_mujoco_env``)."""
    return make_envpool_mujoco_env(_family_name(env_name), cfg, env_config, render_mode)
