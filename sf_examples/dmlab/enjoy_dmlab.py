"""Watch a DeepMind Lab agent.

python -m sf_examples.dmlab.enjoy_dmlab --env=dmlab_rooms_watermaze --experiment=watermaze --save_video --no_render
"""

from __future__ import annotations

import sys

from sample_factory.enjoy import enjoy
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode
from sample_factory.utils.utils import log
from sf_examples.dmlab.train_dmlab import check_can_run, parse_dmlab_cfg, register_dmlab_envs


def main() -> StatusCode:
    register_dmlab_envs()
    cfg = parse_dmlab_cfg(evaluation=True)
    problem = check_can_run(cfg)
    if problem:
        log.error("%s", problem)
        return ExperimentStatus.FAILURE
    status, _ = enjoy(cfg)
    return status


if __name__ == "__main__":
    sys.exit(main())
