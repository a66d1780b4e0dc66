"""Flags and defaults of the DeepMind Lab family; its env names and factory (in ``dmlab_env``) re-exported.

``dmlab_<level>`` plays one DMLab-30 level; ``dmlab_30`` spreads the 30 levels over the envs of a run (env
``env_id`` plays level ``env_id % 30``, so every level is sampled with 30 or more envs); ``dmlab_benchmark`` is one
fixed level for throughput measurements (``rooms_collect_good_objects_train``).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from sample_factory.utils.utils import str2bool
from sf_examples.dmlab.dmlab_env import (
    BENCHMARK_ENV,
    BENCHMARK_LEVEL,
    DMLAB_ENVS,
    LEVEL_NAMES,
    MULTI_TASK_ENV,
    level_for,
    make_dmlab_env,
)

__all__ = [
    "BENCHMARK_ENV", "BENCHMARK_LEVEL", "DMLAB_DEFAULTS", "DMLAB_ENVS", "LEVEL_NAMES", "MULTI_TASK_ENV",
    "add_dmlab_env_args", "dmlab_override_defaults", "level_for", "make_dmlab_env",
]  # fmt: skip

# Sample Factory 2.1.1's DMLab defaults, value for value (tests/envs/test_family_defaults.py holds them to it): the
# shallow IMPALA conv net with a 256-unit LSTM over 32-step rollouts, frame skip 4, 96x72 RGB frames (Espeholt et al.,
# 2018). Everything else is Sample Factory's general default; the command line still wins.
DMLAB_DEFAULTS: dict[str, Any] = {
    "env_frameskip": 4,
    "encoder_conv_architecture": "convnet_impala",
    "nonlinearity": "relu",
    "obs_subtract_mean": 0.0,
    "obs_scale": 255.0,
    # running normalisation of the frames only (other keys an env adds stay as they are)
    "normalize_input_keys": ["obs"],
    "rnn_type": "lstm",
    "rnn_size": 256,
    "rollout": 32,
    "recurrence": 32,
    "num_epochs": 1,
}


def add_dmlab_env_args(parser: argparse.ArgumentParser) -> None:
    """Flags of the family (saved in config.json, so enjoy and eval rebuild the same envs)."""
    group = parser.add_argument_group("DeepMind Lab", "Flags of the dmlab_* envs.")
    group.add_argument(
        "--dmlab_level_cache_path",
        type=str,
        default=os.path.join(os.path.expanduser("~"), ".cache", "sample_factory", "dmlab_level_cache"),
        help="Folder of compiled level maps shared by all envs and runs; empty string: no cache (every episode "
        "start compiles its map, seconds each).",
    )
    group.add_argument(
        "--dmlab_renderer", type=str, default="software", choices=["software", "hardware"],
        help="DeepMind Lab's renderer: software (OSMesa, works headless) or hardware (OpenGL through EGL/GLX).",
    )  # fmt: skip
    group.add_argument("--dmlab_width", type=int, default=96, help="Frame width (IMPALA used 96x72).")
    group.add_argument("--dmlab_height", type=int, default=72, help="Frame height.")
    group.add_argument(
        "--dmlab_one_task_per_worker",
        type=str2bool,
        default=False,
        help="dmlab_30: all envs of a rollout worker play the same level (level = worker index %% 30), which "
        "keeps each worker's memory to one level's assets.",
    )
    group.add_argument(
        "--dmlab_datasets_path",
        type=str,
        default=None,
        help="Folder of the images the psychlab levels show (brady_konkle_oliva2008); default: $DMLAB_DATASET_PATH.",
    )


def dmlab_override_defaults(parser: argparse.ArgumentParser) -> None:
    """Family defaults (``DMLAB_DEFAULTS``), the same for every level."""
    parser.set_defaults(**DMLAB_DEFAULTS)
