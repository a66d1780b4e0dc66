"""Train on the Atari family.

    python -m sf_examples.atari.train_atari --env=atari_breakout --experiment=breakout
    python -m sf_examples.atari.train_atari --env=atari_pong --train_for_env_steps=10000000

Envs: ``atari_<game>`` for the 57 games of the Atari-57 benchmark (``atari_breakout``, ``atari_pong``,
``atari_beamrider``, ``atari_qbert``, ``atari_spaceinvaders``, ``atari_seaquest``, ``atari_montezuma``, ...;
the full table is in ``docs/atari.md``).
"""

from __future__ import annotations

import sys

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env, unknown_env_message
from sample_factory.train import run_rl
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import log
from sf_examples.atari.atari_games import ATARI_ENVS
from sf_examples.atari.atari_params import add_atari_env_args, atari_override_defaults
from sf_examples.atari.atari_utils import make_atari_env

TRAIN_SCRIPT = "sf_examples.atari.train_atari"
ENJOY_SCRIPT = "sf_examples.atari.enjoy_atari"


def register_atari_components() -> None:
    """Every ``atari_*`` name creates its env through the same factory; the conv net is chosen by flags."""
    for env_name in ATARI_ENVS:
        register_env(env_name, make_atari_env)


def parse_atari_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the family's flags and defaults, then the strict final parse."""
    parser, _ = parse_sf_args(argv=argv, evaluation=evaluation)
    add_atari_env_args(parser)
    atari_override_defaults(parser, evaluation=evaluation)
    if evaluation:
        parser.set_defaults(train_script=TRAIN_SCRIPT, enjoy_script=ENJOY_SCRIPT)
    return parse_full_cfg(parser, argv)


# Sample Factory 2's name for the same function: parse_atari_args(argv=None, evaluation=False) -> cfg
parse_atari_args = parse_atari_cfg


def check_env_name(cfg: Config) -> bool:
    """Fail early, naming the Atari envs, before any process starts."""
    if cfg.env in ATARI_ENVS:
        return True
    log.error("%s", unknown_env_message(str(cfg.env), sorted(ATARI_ENVS)))
    return False


def main() -> StatusCode:
    register_atari_components()
    cfg = parse_atari_cfg()
    if not check_env_name(cfg):
        return 1
    return run_rl(cfg)


if __name__ == "__main__":
    sys.exit(main())
