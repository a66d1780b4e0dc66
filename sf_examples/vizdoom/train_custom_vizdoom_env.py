"""Train on a VizDoom scenario of your own: a .cfg file, an action space and a timeout make a new env.

    python -m sf_examples.vizdoom.train_custom_vizdoom_env --env=doom_my_custom_env --experiment=custom \
        --custom_env_episode_len=300

The example plays the shipped ``basic.cfg`` with Sample Factory 2's basic action layout (move, shoot); point
``CUSTOM_SCENARIO`` at your own .cfg (and its .wad) to train on your map.
"""

from __future__ import annotations

import argparse
import functools
import sys

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl
from sample_factory.utils.typing import Config, StatusCode
from sf_examples.vizdoom.doom.action_space import doom_action_space_basic
from sf_examples.vizdoom.doom.doom_model import make_vizdoom_encoder
from sf_examples.vizdoom.doom.doom_params import add_doom_env_args, doom_override_defaults
from sf_examples.vizdoom.doom.doom_utils import make_doom_env_from_spec
from sf_examples.vizdoom.doom.scenarios import DoomSpec

CUSTOM_ENV = "doom_my_custom_env"
CUSTOM_SCENARIO = "basic.cfg"  # a shipped scenario name, or the path of your own .cfg


def add_custom_args(parser: argparse.ArgumentParser) -> None:
    """The custom env's own flag."""
    parser.add_argument(
        "--custom_env_episode_len", type=int, default=300, help="Episode length of the custom env, in tics."
    )


def register_custom_doom_env(custom_timeout: int) -> None:
    """Register ``doom_my_custom_env`` (episodes of ``custom_timeout`` tics) and the VizDoom encoder."""
    spec = DoomSpec(CUSTOM_ENV, CUSTOM_SCENARIO, doom_action_space_basic(), reward_scaling=0.01,
                    default_timeout=custom_timeout)  # fmt: skip
    register_env(CUSTOM_ENV, functools.partial(make_doom_env_from_spec, spec))
    global_model_factory().register_encoder_factory(make_vizdoom_encoder)


def parse_custom_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the VizDoom flags and defaults, the custom flag, then the strict final parse."""
    parser, _ = parse_sf_args(argv, evaluation=evaluation)
    add_doom_env_args(parser)
    doom_override_defaults(parser, evaluation)
    add_custom_args(parser)
    parser.set_defaults(env=CUSTOM_ENV)
    return parse_full_cfg(parser, argv)


def main() -> StatusCode:
    cfg = parse_custom_cfg()
    register_custom_doom_env(cfg.custom_env_episode_len)
    return run_rl(cfg)


if __name__ == "__main__":
    sys.exit(main())
