"""Evaluate a policy trained by ``sf_examples.train_gym_env`` on many envs at once.

python -m sf_examples.eval_gym_env --env=CartPole-v1 --experiment=cartpole --max_num_episodes=200

Writes ``eval_results.csv`` (one row per episode) into the experiment folder and logs a summary.
"""

from __future__ import annotations

import sys

from sample_factory.algo.utils.misc import ExperimentStatus
from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.eval import do_eval
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import StatusCode
from sf_examples.train_gym_env import parse_gym_args, register_env_from_cfg


def main() -> StatusCode:
    cfg = parse_gym_args(evaluation=True)
    try:
        register_env_from_cfg(cfg)
    except UnknownEnvError as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return do_eval(cfg)


if __name__ == "__main__":
    sys.exit(main())
