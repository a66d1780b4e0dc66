"""Train on the MuJoCo family.

    python -m sf_examples.mujoco.train_mujoco --env=mujoco_halfcheetah --experiment=halfcheetah
    python -m sf_examples.mujoco.train_mujoco --env=mujoco_pendulum --train_for_env_steps=300000 --device=cpu

Envs: ``mujoco_ant``, ``mujoco_halfcheetah``, ``mujoco_hopper``, ``mujoco_humanoid``, ``mujoco_standup``,
``mujoco_doublependulum``, ``mujoco_pendulum``, ``mujoco_reacher``, ``mujoco_walker``, ``mujoco_pusher``,
``mujoco_swimmer``. See ``docs/mujoco.md``.
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import Config, StatusCode
from sf_examples.entry_points import FamilyFlags, register_family_envs, train_family_env
from sf_examples.mujoco.mujoco_params import add_mujoco_env_args, mujoco_override_defaults
from sf_examples.mujoco.mujoco_utils import MUJOCO_ENVS, make_mujoco_env

MUJOCO_FLAGS = FamilyFlags(
    add_mujoco_env_args,
    mujoco_override_defaults,
    train_script="sf_examples.mujoco.train_mujoco",
    enjoy_script="sf_examples.mujoco.enjoy_mujoco",
    defaults_take_evaluation=True,
)


def register_mujoco_components() -> None:
    """Every ``mujoco_*`` name creates its env through the same module-level factory (the default MLP model)."""
    register_family_envs(MUJOCO_ENVS, make_mujoco_env)


def parse_mujoco_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the MuJoCo flags and defaults, then the strict final parse."""
    return MUJOCO_FLAGS.parse(argv, evaluation)


def main() -> StatusCode:
    register_mujoco_components()
    cfg = parse_mujoco_cfg()
    return train_family_env(cfg, MUJOCO_ENVS)


if __name__ == "__main__":
    sys.exit(main())
