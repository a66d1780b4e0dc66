"""Watch an EnvPool MuJoCo policy, on Gymnasium's copy of the task (EnvPool cannot render headless; needs the
``mujoco`` extra).

    python -m sf_examples.envpool.mujoco.enjoy_envpool_mujoco --env=envpool_mujoco_halfcheetah --experiment=cheetah \
        --save_video --no_render
"""

from __future__ import annotations

import sys

from sample_factory.enjoy import enjoy
from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.utils.typing import StatusCode
from sf_examples.envpool.mujoco.train_envpool_mujoco import SCRIPTS


def main() -> StatusCode:
    try:
        cfg = SCRIPTS.prepare(evaluation=True)
    except (MissingDependencyError, ValueError) as exc:
        return SCRIPTS.fail(exc)
    status, _ = enjoy(cfg)
    return status


if __name__ == "__main__":
    sys.exit(main())
