"""Watch an EnvPool MuJoCo policy, on Gymnasium's copy of the task (EnvPool cannot render headless; needs the
``mujoco`` extra). On a machine without a display, add ``--save_video --no_render`` to write an MP4 instead:

    python -m sf_examples.envpool.mujoco.enjoy_envpool_mujoco --env=envpool_mujoco_halfcheetah --experiment=cheetah
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.envpool.mujoco.train_envpool_mujoco import SCRIPTS


def main() -> StatusCode:
    return SCRIPTS.enjoy()


if __name__ == "__main__":
    sys.exit(main())
