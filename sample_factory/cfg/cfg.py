"""Declarations of every command-line flag, one small function per topic (in the ``flags_*`` modules by area).

Each ``add_*_args`` function puts its flags into a named argument group so that ``--help`` and the generated
flag reference (``docs/flags.md``) show them by topic. Env families call these through
:func:`sample_factory.cfg.arguments.parse_sf_args` and then add their own flags or override defaults with
``parser.set_defaults(...)`` before the final parse.

Help strings avoid the percent sign: argparse expands ``%(...)s`` patterns in them.
"""

from __future__ import annotations

import argparse
import os

from sample_factory.cfg.flags_extras import add_eval_args, add_evaluator_args, add_pbt_args, add_wandb_args
from sample_factory.cfg.flags_model_env import add_default_env_args, add_model_args
from sample_factory.cfg.flags_runtime import (
    LEGACY_ALIASES,
    add_checkpoint_args,
    add_distributed_args,
    add_fault_tolerance_args,
    add_legacy_aliases,
    add_logging_args,
    add_process_args,
)
from sample_factory.cfg.flags_training import (
    add_batching_args,
    add_loss_args,
    add_obs_normalization_args,
    add_optimizer_args,
    add_sampling_args,
)
from sample_factory.utils.utils import str2bool

ArgParser = argparse.ArgumentParser

__all__ = [
    "LEGACY_ALIASES",
    "add_basic_cli_args",
    "add_default_env_args",
    "add_eval_args",
    "add_evaluator_args",
    "add_model_args",
    "add_pbt_args",
    "add_rl_args",
    "add_wandb_args",
    "str2bool",
]


def add_basic_cli_args(p: ArgParser) -> None:
    """What to train, where to write it, and on which device."""
    g = p.add_argument_group("Basic", "What to run and where its files go.")
    g.add_argument(
        "--algo",
        type=str,
        default="APPO",
        help="RL algorithm. Only APPO is implemented: any other value is refused (the flag exists so Sample Factory 2 "
        "command lines and config.json files still load).",
    )
    g.add_argument("--env", type=str, default=None, help="Registered env name; its prefix selects the env family.")
    g.add_argument(
        "--experiment",
        type=str,
        default="default_experiment",
        help="Name of the experiment folder inside --train_dir; reuse a name to resume that run.",
    )
    g.add_argument(
        "--train_dir",
        type=str,
        default=os.path.join(os.getcwd(), "train_dir"),
        help="Root folder for all experiments (checkpoints, config.json, logs, summaries).",
    )
    g.add_argument(
        "--restart_behavior",
        type=str,
        default="resume",
        choices=["resume", "restart", "overwrite"],
        help="What to do when the experiment folder already exists: resume it, move it aside and start fresh "
        "(restart), or delete it (overwrite).",
    )
    g.add_argument(
        "--device",
        type=str,
        default="gpu",
        choices=["gpu", "cpu"],
        help="Where the learner and inference run; gpu falls back to cpu with a warning when CUDA is missing.",
    )
    g.add_argument("--seed", type=int, default=None, help="Fix the random seeds for reproducible runs; None = random.")


def add_rl_args(p: ArgParser) -> None:
    """Everything about sampling, the PPO/V-trace update, optimisation, logging and checkpoints."""
    add_sampling_args(p)
    add_batching_args(p)
    add_loss_args(p)
    add_optimizer_args(p)
    add_obs_normalization_args(p)
    add_process_args(p)
    add_logging_args(p)
    add_checkpoint_args(p)
    add_fault_tolerance_args(p)
    add_distributed_args(p)
    add_legacy_aliases(p)
