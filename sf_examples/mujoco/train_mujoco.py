"""Train on the MuJoCo family.

    python -m sf_examples.mujoco.train_mujoco --env=mujoco_halfcheetah --experiment=halfcheetah
    python -m sf_examples.mujoco.train_mujoco --env=mujoco_pendulum --train_for_env_steps=300000 --device=cpu

Envs: ``mujoco_ant``, ``mujoco_halfcheetah``, ``mujoco_hopper``, ``mujoco_humanoid``, ``mujoco_standup``,
``mujoco_doublependulum``, ``mujoco_pendulum``, ``mujoco_reacher``, ``mujoco_walker``, ``mujoco_pusher``,
``mujoco_swimmer``. See ``docs/mujoco.md``.
"""

from __future__ import annotations

from sample_factory.utils.processes import exit_process
from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import FamilyFlags, register_family_envs, train_family
from sf_examples.families import MUJOCO
from sf_examples.mujoco.mujoco_utils import MUJOCO_ENVS, make_mujoco_env

MUJOCO_FLAGS = FamilyFlags.of(MUJOCO, enjoy_script="sf_examples.mujoco.enjoy_mujoco")


def register_mujoco_components() -> None:
    """Every ``mujoco_*`` name creates its env through the same module-level factory (the default MLP model)."""
    register_family_envs(MUJOCO_ENVS, make_mujoco_env)


# parse_mujoco_cfg(argv=None, evaluation=False) -> cfg: standard flags, the MuJoCo flags and defaults, then the
# strict final parse
parse_mujoco_cfg = MUJOCO_FLAGS.parse


def main() -> StatusCode:
    return train_family(register_mujoco_components, parse_mujoco_cfg, MUJOCO_ENVS)


if __name__ == "__main__":
    exit_process(main())  # sys.exit without the interpreter's module teardown (see exit_process)
