"""Watch an Atari agent play whole games: a window, or an MP4 with ``--save_video`` (no display needed).

python -m sf_examples.atari.enjoy_atari --env=atari_breakout --experiment=breakout --save_video
"""

from __future__ import annotations

import sys

from sample_factory.enjoy import enjoy
from sample_factory.utils.typing import StatusCode
from sf_examples.atari.train_atari import check_env_name, parse_atari_cfg, register_atari_components


def main() -> StatusCode:
    register_atari_components()
    cfg = parse_atari_cfg(evaluation=True)
    if not check_env_name(cfg):
        return 1
    status, _ = enjoy(cfg)
    return status


if __name__ == "__main__":
    sys.exit(main())
