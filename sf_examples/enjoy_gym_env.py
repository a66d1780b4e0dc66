"""Watch a policy trained by ``sf_examples.train_gym_env``.

python -m sf_examples.enjoy_gym_env --env=CartPole-v1 --experiment=cartpole
python -m sf_examples.enjoy_gym_env --env=CartPole-v1 --experiment=cartpole --save_video --video_frames=500
"""

from __future__ import annotations

import sys

from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_status
from sf_examples.train_gym_env import parse_gym_args, register_env_from_cfg


def main() -> StatusCode:
    cfg = parse_gym_args(evaluation=True)
    try:
        register_env_from_cfg(cfg)
    except UnknownEnvError as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return enjoy_status(cfg)


if __name__ == "__main__":
    sys.exit(main())
