"""Train on Atari games simulated by EnvPool, stepped by the batched sampler.

    python -m sf_examples.envpool.atari.train_envpool_atari --env=envpool_atari_breakout --experiment=breakout
    python -m sf_examples.envpool.atari.train_envpool_atari --env=atari_breakout ...   # Sample Factory 2's name

Each rollout worker holds one EnvPool instance of ``--env_agents`` games (``--num_envs_per_worker=1``,
``--batched_sampling=True``). Env names: ``envpool_atari_<game>`` for the 57 games of ``ATARI_57``
(``envpool_atari_montezuma`` for Montezuma's Revenge). See ``docs/envpool.md``.
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import Config, StatusCode
from sf_examples.envpool.atari.envpool_atari_params import (
    ENVPOOL_ATARI_ENVS,
    envpool_atari_override_defaults,
    make_envpool_atari_env,
)
from sf_examples.envpool.envpool_family import EnvPoolFamilyScripts

SCRIPTS = EnvPoolFamilyScripts(
    kind="atari",
    env_names=ENVPOOL_ATARI_ENVS,
    default_task="breakout",
    override_defaults=envpool_atari_override_defaults,
    make_env=make_envpool_atari_env,
)


def parse_envpool_atari_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    return SCRIPTS.parse_cfg(argv, evaluation)


# the names generic tools (sf_examples/families.py) and user code import
register_envpool_atari_envs = SCRIPTS.register_envs
register_envpool_atari_family = SCRIPTS.register_family
# Sample Factory 2's names of the same functions (its EnvPool scripts reused the Atari family's names)
parse_atari_args = parse_envpool_atari_cfg
register_atari_components = register_envpool_atari_envs


def main() -> StatusCode:
    return SCRIPTS.run()


if __name__ == "__main__":
    sys.exit(main())
