"""Train on MuJoCo tasks simulated by EnvPool, stepped by the batched sampler.

    python -m sf_examples.envpool.mujoco.train_envpool_mujoco --env=envpool_mujoco_halfcheetah --experiment=cheetah
    python -m sf_examples.envpool.mujoco.train_envpool_mujoco --env=mujoco_halfcheetah ...   # Sample Factory 2's name

Each rollout worker holds one EnvPool instance of ``--env_agents`` copies of the task (``--num_envs_per_worker=1``,
``--batched_sampling=True``). Env names: ``envpool_mujoco_<task>`` for the tasks of ``ENVPOOL_MUJOCO_ENVS``. See
``docs/envpool.md``.
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import Config, StatusCode
from sf_examples.envpool.envpool_family import EnvPoolFamilyScripts
from sf_examples.envpool.mujoco.envpool_mujoco_params import (
    ENVPOOL_MUJOCO_ENVS,
    envpool_mujoco_override_defaults,
    make_envpool_mujoco_env,
)

SCRIPTS = EnvPoolFamilyScripts(
    kind="mujoco",
    env_names=ENVPOOL_MUJOCO_ENVS,
    default_task="halfcheetah",
    override_defaults=envpool_mujoco_override_defaults,
    make_env=make_envpool_mujoco_env,
)


def parse_envpool_mujoco_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    return SCRIPTS.parse_cfg(argv, evaluation)


# the names generic tools (sf_examples/families.py) and user code import
register_envpool_mujoco_envs = SCRIPTS.register_envs
register_envpool_mujoco_family = SCRIPTS.register_family
# Sample Factory 2's names of the same functions (its EnvPool scripts reused the MuJoCo family's names)
parse_mujoco_cfg = parse_envpool_mujoco_cfg
register_mujoco_components = register_envpool_mujoco_envs


def main() -> StatusCode:
    return SCRIPTS.run()


if __name__ == "__main__":
    sys.exit(main())
