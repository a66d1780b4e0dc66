"""Evaluate a MuJoCo policy on many envs at once, one batched forward pass per step; writes ``eval_results.csv``.

    python -m sf_examples.mujoco.fast_eval_mujoco --env=mujoco_halfcheetah --experiment=halfcheetah \
        --max_num_episodes=50

The family's script for ``python -m sample_factory.eval`` (which finds the family by the env name as well):
actions sampled from the policy (``--eval_deterministic=True`` takes the mean action), no rendering.
"""

from __future__ import annotations

import sys

from sample_factory.eval import do_eval
from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_family
from sf_examples.mujoco.mujoco_utils import MUJOCO_ENVS
from sf_examples.mujoco.train_mujoco import parse_mujoco_cfg, register_mujoco_components


def main() -> StatusCode:
    return enjoy_family(register_mujoco_components, parse_mujoco_cfg, MUJOCO_ENVS, run=do_eval)


if __name__ == "__main__":
    sys.exit(main())
