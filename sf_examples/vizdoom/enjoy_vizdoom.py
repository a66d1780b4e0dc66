"""Watch a VizDoom agent (a window at real-time speed, or ``--save_video`` / ``--no_render``).

python -m sf_examples.vizdoom.enjoy_vizdoom --env=doom_basic --experiment=doom_basic
"""

from __future__ import annotations

import sys

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.utils.typing import Config, StatusCode
from sf_examples.entry_points import enjoy_family
from sf_examples.vizdoom.doom.doom_params import add_doom_env_eval_args
from sf_examples.vizdoom.doom.scenarios import DOOM_SPECS
from sf_examples.vizdoom.train_vizdoom import VIZDOOM_FLAGS, register_vizdoom_components


def parse_vizdoom_eval_cfg(argv: list[str] | None = None, evaluation: bool = True) -> Config:
    """The family's flags and watching defaults plus ``--record_to`` (demos of the watched games)."""
    parser, partial_cfg = parse_sf_args(argv=argv, evaluation=evaluation)
    VIZDOOM_FLAGS.add_to(parser, partial_cfg.env, evaluation)
    add_doom_env_eval_args(parser)
    return parse_full_cfg(parser, argv)


def main() -> StatusCode:
    return enjoy_family(register_vizdoom_components, parse_vizdoom_eval_cfg, DOOM_SPECS)


if __name__ == "__main__":
    sys.exit(main())
