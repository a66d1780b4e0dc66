"""Train on Atari games simulated by EnvPool, stepped by the batched sampler.

    python -m sf_examples.envpool.atari.train_envpool_atari --env=envpool_atari_breakout --experiment=breakout
    python -m sf_examples.envpool.atari.train_envpool_atari --env=atari_breakout ...   # Sample Factory 2's name

Each rollout worker holds one EnvPool instance of ``--env_agents`` games (``--num_envs_per_worker=1``,
``--batched_sampling=True``). Env names: ``envpool_atari_<game>`` for the 57 games of ``ATARI_57``
(``envpool_atari_montezuma`` for Montezuma's Revenge). See ``docs/envpool.md``.
"""

from __future__ import annotations

import sys

from sample_factory.envs.env_utils import MissingDependencyError, register_env
from sample_factory.train import run_rl
from sample_factory.utils.typing import Config, StatusCode
from sf_examples.envpool.atari.envpool_atari_params import (
    ENVPOOL_ATARI_ENVS,
    PREFIX,
    envpool_atari_override_defaults,
    make_envpool_atari_env,
)
from sf_examples.envpool.envpool_family import EnvPoolFamilyScripts
from sf_examples.envpool.envpool_utils import require_envpool

TRAIN_SCRIPT = "sf_examples.envpool.atari.train_envpool_atari"
ENJOY_SCRIPT = "sf_examples.envpool.atari.enjoy_envpool_atari"


def register_envpool_atari_envs(env_name: str | None = None) -> None:
    """Register every ``envpool_atari_*`` name (``env_name``, passed by generic tools, makes no difference)."""
    del env_name
    for name in ENVPOOL_ATARI_ENVS:
        register_env(name, make_envpool_atari_env)


def register_envpool_atari_family(env_name: str) -> None:
    """The family's hook for generic tools: a missing envpool fails here, in the main process, in one line."""
    require_envpool()
    register_envpool_atari_envs(env_name)


SCRIPTS = EnvPoolFamilyScripts(
    prefix=PREFIX,
    env_names=ENVPOOL_ATARI_ENVS,
    default_env=PREFIX + "breakout",
    override_defaults=envpool_atari_override_defaults,
    register=register_envpool_atari_envs,
    train_script=TRAIN_SCRIPT,
    enjoy_script=ENJOY_SCRIPT,
)


def parse_envpool_atari_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    return SCRIPTS.parse_cfg(argv, evaluation)


def main() -> StatusCode:
    try:
        cfg = SCRIPTS.prepare(evaluation=False)
    except (MissingDependencyError, ValueError) as exc:
        return SCRIPTS.fail(exc)
    return run_rl(cfg)


if __name__ == "__main__":
    sys.exit(main())
