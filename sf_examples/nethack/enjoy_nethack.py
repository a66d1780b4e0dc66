"""Watch a NetHack agent play: the terminal printed after every step, or an MP4 with ``--save_video``.

    python -m sf_examples.nethack.enjoy_nethack --env=nethack_challenge --experiment=nethack_monk
    python -m sf_examples.nethack.enjoy_nethack --env=nethack_challenge --experiment=nethack_monk --save_video \
        --max_num_episodes=1
    python -m sf_examples.nethack.enjoy_nethack --env=nethack_challenge --experiment=nethack_monk --no_render \
        --max_num_episodes=10
"""

from __future__ import annotations

import sys

from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_status
from sf_examples.nethack.train_nethack import can_run, parse_nethack_args, register_nethack_components


def main() -> StatusCode:
    register_nethack_components()
    cfg = parse_nethack_args(evaluation=True)
    if not can_run(cfg):
        return ExperimentStatus.FAILURE
    return enjoy_status(cfg)


if __name__ == "__main__":
    sys.exit(main())
