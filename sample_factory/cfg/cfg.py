"""Declarations of every command-line flag: the rows of ``flags.tsv``, added by one function per ``--help`` section.

The flags are data (``flags.tsv`` next to this module: name, type, default, choices, help; section titles in
``flag_groups.tsv``), read by :mod:`sample_factory.utils.flag_table`. Each ``add_*_args`` function declares one
section in an argument group, so ``--help`` and the generated reference (``docs/flags.md``) show the flags by
topic in table order. Env families call these through :func:`sample_factory.cfg.arguments.parse_sf_args` and then
add their own flags or override defaults with ``parser.set_defaults(...)`` before the final parse.

A new flag is a new row in the section it belongs to; then regenerate ``docs/flags.md``. Help strings avoid the
percent sign: argparse expands ``%(...)s`` patterns in them.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
from collections.abc import Callable
from importlib.resources import files

from sample_factory.utils.flag_table import FlagTable, read_flag_table
from sample_factory.utils.utils import str2bool

ArgParser = argparse.ArgumentParser

# Flags renamed since the 1.x releases: old dest -> new dest. The old spelling still parses (with a warning).
LEGACY_ALIASES: dict[str, str] = {
    "ppo_epochs": "num_epochs",
    "num_minibatches_to_accumulate": "num_batches_to_accumulate",
}

FLAG_TYPES = {"int": int, "float": float, "str": str, "str2bool": str2bool}

# Defaults that depend on the machine and the working directory: computed each time a parser is built.
COMPUTED_DEFAULTS: dict[str, Callable[[], object]] = {
    "cpu_count": multiprocessing.cpu_count,
    "cwd_train_dir": lambda: os.path.join(os.getcwd(), "train_dir"),
}

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
    "standard_flags",
    "str2bool",
]


@functools.cache
def standard_flags() -> FlagTable:
    """The package's flag table, read once per process."""
    return read_flag_table(files(__package__), FLAG_TYPES, COMPUTED_DEFAULTS)


def _section_adder(section: str) -> Callable[[ArgParser], None]:
    """``add_<section>_args(p)``: declares the flags whose ``group`` cell in ``flags.tsv`` is ``section``."""

    def add(p: ArgParser) -> None:
        standard_flags().add_group(p, section)

    add.__name__ = add.__qualname__ = f"add_{section}_args"
    add.__doc__ = f"Declare the flags of the {section!r} section of flags.tsv in their own argument group."
    return add


# what to train, where its files go, on which device
add_basic_cli_args = _section_adder("basic_cli")
# sampling and the PPO/V-trace update
add_sampling_args = _section_adder("sampling")
add_batching_args = _section_adder("batching")
add_loss_args = _section_adder("loss")
add_optimizer_args = _section_adder("optimizer")
add_obs_normalization_args = _section_adder("obs_normalization")
# the running system
add_process_args = _section_adder("process")
add_logging_args = _section_adder("logging")
add_checkpoint_args = _section_adder("checkpoint")
add_fault_tolerance_args = _section_adder("fault_tolerance")
add_distributed_args = _section_adder("distributed")
# the actor-critic and the env settings every family shares (families override their defaults)
add_model_args = _section_adder("model")
add_default_env_args = _section_adder("default_env")
# optional parts
add_wandb_args = _section_adder("wandb")
add_pbt_args = _section_adder("pbt")
add_evaluator_args = _section_adder("evaluator")
_add_eval_section = _section_adder("eval")


def add_eval_args(parser: ArgParser) -> None:
    """Declare the enjoy/eval-only flags (the ``eval`` section of flags.tsv): ``parse_sf_args(evaluation=True)``."""
    _add_eval_section(parser)


def add_legacy_aliases(p: ArgParser) -> None:
    """Old flag names that still parse; :func:`parse_full_cfg` maps them to the new dest with a warning.

    They have no default (``SUPPRESS``) so they appear in the parsed namespace only when given.
    """
    section = standard_flags().add_group(p, "legacy_aliases")
    for old, new in LEGACY_ALIASES.items():
        section.add_argument(
            f"--{old}", type=int, default=argparse.SUPPRESS, help=f"Deprecated name of --{new}; use --{new}."
        )


def add_rl_args(p: ArgParser) -> None:
    """Everything about sampling, the PPO/V-trace update, optimisation, logging and checkpoints."""
    for add in (
        add_sampling_args,
        add_batching_args,
        add_loss_args,
        add_optimizer_args,
        add_obs_normalization_args,
        add_process_args,
        add_logging_args,
        add_checkpoint_args,
        add_fault_tolerance_args,
        add_distributed_args,
        add_legacy_aliases,
    ):
        add(p)
