"""Watch an Atari agent play whole games: a window, or an MP4 with ``--save_video`` (no display needed).

python -m sf_examples.atari.enjoy_atari --env=atari_breakout --experiment=breakout --save_video
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.atari.atari_games import ATARI_ENVS
from sf_examples.atari.train_atari import parse_atari_cfg, register_atari_components
from sf_examples.entry_points import enjoy_family


def main() -> StatusCode:
    return enjoy_family(register_atari_components, parse_atari_cfg, ATARI_ENVS)


if __name__ == "__main__":
    sys.exit(main())
