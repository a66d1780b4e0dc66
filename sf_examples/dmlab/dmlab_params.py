"""Env names, flags and defaults of the DeepMind Lab family, and the env factory they share.

``dmlab_<level>`` plays one DMLab-30 level; ``dmlab_30`` spreads the 30 levels over the envs of a run (env
``env_id`` plays level ``env_id % 30``, so every level is sampled with 30 or more envs); ``dmlab_benchmark`` is one
fixed level for throughput measurements (``rooms_collect_good_objects_train``).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import str2bool
from sf_examples.dmlab.dmlab30 import DMLAB30_LEVELS
from sf_examples.dmlab.dmlab_env import DmlabGymEnv, make_lab

MULTI_TASK_ENV = "dmlab_30"
BENCHMARK_ENV = "dmlab_benchmark"
BENCHMARK_LEVEL = "rooms_collect_good_objects_train"
DMLAB_ENVS: tuple[str, ...] = (MULTI_TASK_ENV, BENCHMARK_ENV, *(f"dmlab_{name}" for name in DMLAB30_LEVELS))
LEVEL_NAMES = list(DMLAB30_LEVELS)

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


def add_dmlab_env_args(env_name: str, parser: argparse.ArgumentParser) -> None:
    """Flags of the family (saved in config.json, so enjoy and eval rebuild the same envs)."""
    del env_name
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


def dmlab_override_defaults(env_name: str, parser: argparse.ArgumentParser) -> None:
    del env_name
    parser.set_defaults(**DMLAB_DEFAULTS)


def level_for(env_name: str, cfg: Config | None, env_config: AttrDict | None) -> str:
    """The DMLab-30 level an env instance plays."""
    if env_name == BENCHMARK_ENV:
        return BENCHMARK_LEVEL
    if env_name != MULTI_TASK_ENV:
        return env_name[len("dmlab_") :]
    if env_config is None or env_config.env_id < 0:
        return LEVEL_NAMES[0]  # the env that only reports spaces: every level has the same ones
    per_worker = bool(getattr(cfg, "dmlab_one_task_per_worker", False))
    index = env_config.worker_index if per_worker else env_config.env_id
    return LEVEL_NAMES[index % len(LEVEL_NAMES)]


def make_dmlab_env(
    full_env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> DmlabGymEnv:
    """The ``make_env_func`` of every ``dmlab_*`` env (raises MissingDependencyError without deepmind_lab)."""
    get = (lambda name, default: getattr(cfg, name, default)) if cfg is not None else (lambda name, default: default)
    width, height = int(get("dmlab_width", 96)), int(get("dmlab_height", 72))
    factory = make_lab(width, height, get("dmlab_renderer", "software"), get("dmlab_level_cache_path", "") or None)
    level = level_for(full_env_name, cfg, env_config)
    frameskip = int(get("env_frameskip", 4))
    return DmlabGymEnv(level, factory, width=width, height=height, frameskip=frameskip, render_mode=render_mode)
