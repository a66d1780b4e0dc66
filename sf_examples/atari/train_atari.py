"""Train on the Atari family.

    python -m sf_examples.atari.train_atari --env=atari_breakout --experiment=breakout
    python -m sf_examples.atari.train_atari --env=atari_pong --train_for_env_steps=10000000

Envs: ``atari_<game>`` for the 57 games of the Atari-57 benchmark (``atari_breakout``, ``atari_pong``,
``atari_beamrider``, ``atari_qbert``, ``atari_spaceinvaders``, ``atari_seaquest``, ``atari_montezuma``, ...;
the full table is in ``docs/atari.md``).
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import Config, StatusCode
from sf_examples.atari.atari_games import ATARI_ENVS
from sf_examples.atari.atari_params import add_atari_env_args, atari_override_defaults
from sf_examples.atari.atari_utils import make_atari_env
from sf_examples.entry_points import FamilyFlags, register_family_envs, train_family_env

ATARI_FLAGS = FamilyFlags(
    add_atari_env_args,
    atari_override_defaults,
    train_script="sf_examples.atari.train_atari",
    enjoy_script="sf_examples.atari.enjoy_atari",
    defaults_take_evaluation=True,
)


def register_atari_components() -> None:
    """Every ``atari_*`` name creates its env through the same factory; the conv net is chosen by flags."""
    register_family_envs(ATARI_ENVS, make_atari_env)


def parse_atari_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the Atari flags and defaults, then the strict final parse."""
    return ATARI_FLAGS.parse(argv, evaluation)


# Sample Factory 2's name for the same function: parse_atari_args(argv=None, evaluation=False) -> cfg
parse_atari_args = parse_atari_cfg


def main() -> StatusCode:
    register_atari_components()
    cfg = parse_atari_cfg()
    return train_family_env(cfg, ATARI_ENVS)


if __name__ == "__main__":
    sys.exit(main())
