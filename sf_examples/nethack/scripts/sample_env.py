"""Step NetHack envs with random actions in worker processes and report frames per second: the ceiling on
training throughput with the same ``--num_workers`` and ``--num_envs_per_worker``.

    python -m sf_examples.nethack.scripts.sample_env --env=nethack_challenge --num_workers=2 \
        --num_envs_per_worker=4 --seconds=10

The family's flags apply (``--add_image_observation=False`` measures NLE without drawing ``screen_image``).
"""

from __future__ import annotations

import sys

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import log
from sf_examples.nethack.train_nethack import NETHACK_FLAGS, can_run, register_nethack_components
from sf_examples.sampler.random_policy_throughput import add_throughput_args, measure_throughput


def parse_sample_env_args(argv: list[str] | None = None) -> Config:
    """Standard flags, the throughput tool's and the NetHack family's, then the strict final parse."""
    parser, partial_cfg = parse_sf_args(argv=argv)
    add_throughput_args(parser)
    NETHACK_FLAGS.add_to(parser, partial_cfg.env, evaluation=False)
    return parse_full_cfg(parser, argv)


def main(argv: list[str] | None = None) -> StatusCode:
    register_nethack_components()
    cfg = parse_sample_env_args(argv)
    if not can_run(cfg):
        return ExperimentStatus.FAILURE
    try:
        measure_throughput(cfg)
    except KeyboardInterrupt:
        log.warning("Interrupted")
        return ExperimentStatus.INTERRUPTED
    except RuntimeError as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return ExperimentStatus.SUCCESS


if __name__ == "__main__":
    sys.exit(main())
