"""Watch a DeepMind Lab agent.

python -m sf_examples.dmlab.enjoy_dmlab --env=dmlab_rooms_watermaze --experiment=watermaze --save_video --no_render
"""

from __future__ import annotations

import sys

from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode
from sf_examples.dmlab.train_dmlab import can_run, parse_dmlab_cfg, register_dmlab_envs
from sf_examples.entry_points import enjoy_status


def main() -> StatusCode:
    register_dmlab_envs()
    cfg = parse_dmlab_cfg(evaluation=True)
    return enjoy_status(cfg) if can_run(cfg) else ExperimentStatus.FAILURE


if __name__ == "__main__":
    sys.exit(main())
