"""Watch a MuJoCo agent: a window where there is a display, or an MP4 with ``--save_video`` (headless EGL/OSMesa).

python -m sf_examples.mujoco.enjoy_mujoco --env=mujoco_halfcheetah --experiment=halfcheetah --save_video
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_family
from sf_examples.mujoco.mujoco_utils import MUJOCO_ENVS
from sf_examples.mujoco.train_mujoco import parse_mujoco_cfg, register_mujoco_components


def main() -> StatusCode:
    return enjoy_family(register_mujoco_components, parse_mujoco_cfg, MUJOCO_ENVS)


if __name__ == "__main__":
    sys.exit(main())
