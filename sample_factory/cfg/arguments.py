"""Public entry points to build and parse the configuration of a run.

Parsing happens in two steps so that env families can take part. :func:`parse_sf_args` declares every
standard flag and parses what it can (unknown family flags are left alone) so that ``--env`` is known; the
family then adds its own flags and overrides defaults on the returned parser; :func:`parse_full_cfg` does
the strict final parse. ``--help`` is only enabled for that final parse, so it lists the family's flags
with the family's defaults.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from sample_factory.cfg.cfg import (
    LEGACY_ALIASES,
    add_basic_cli_args,
    add_default_env_args,
    add_eval_args,
    add_evaluator_args,
    add_model_args,
    add_pbt_args,
    add_rl_args,
    add_wandb_args,
)
from sample_factory.cfg.config_io import (
    cfg_dict,
    cfg_str,
    checkpoint_override_defaults,
    load_from_checkpoint,
    maybe_load_from_checkpoint,
)
from sample_factory.cfg.validation import effective_recurrence, verify_cfg
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import log

__all__ = [
    "parse_sf_args",
    "parse_full_cfg",
    "default_cfg",
    "load_from_checkpoint",
    "maybe_load_from_checkpoint",
    "checkpoint_override_defaults",
    "cfg_dict",
    "cfg_str",
    "verify_cfg",
    "postprocess_args",
    "preprocess_cfg",
]


def _argv_or_sys(argv: Sequence[str] | None) -> list[str]:
    return sys.argv[1:] if argv is None else list(argv)


def parse_sf_args(
    argv: Sequence[str] | None = None, evaluation: bool = False
) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """Build the parser with every standard flag and parse the known ones: returns ``(parser, partial_cfg)``.

    ``evaluation=True`` adds the enjoy/eval flags. Abbreviated flags are disabled: during this partial parse
    a family flag such as ``--num_envs`` would otherwise be taken for ``--num_envs_per_worker``.
    """
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, add_help=False, allow_abbrev=False
    )
    add_basic_cli_args(parser)
    add_rl_args(parser)
    add_model_args(parser)
    add_default_env_args(parser)
    add_wandb_args(parser)
    add_pbt_args(parser)
    add_evaluator_args(parser)
    if evaluation:
        add_eval_args(parser)
    partial_cfg, _ = parser.parse_known_args(_argv_or_sys(argv))
    return parser, partial_cfg


def _enable_help(parser: argparse.ArgumentParser) -> None:
    try:
        parser.add_argument("-h", "--help", action="help", help="Show every flag with its default, then exit.")
    except argparse.ArgumentError:
        pass  # already enabled by an earlier final parse with this parser


def parse_full_cfg(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Strict final parse; also maps legacy flags, resolves ``--recurrence=-1`` and records the command line.

    ``cfg.cli_args`` holds the flags given explicitly (dest -> value): they win over a saved config.json
    when the experiment is resumed. ``cfg.command_line`` is the argument list as one string.
    """
    args = _argv_or_sys(argv)
    _enable_help(parser)
    cfg = parser.parse_args(args)
    return postprocess_args(cfg, args, parser)


def postprocess_args(
    args: argparse.Namespace, argv: Sequence[str] | None, parser: argparse.ArgumentParser
) -> argparse.Namespace:
    """Finish a config that ``parser`` parsed from ``argv`` (None: ``sys.argv[1:]``); returns ``args``, updated.

    Maps legacy flag names onto their new ones, resolves ``--recurrence=-1`` and records the command line:
    ``args.cli_args`` (the flags given explicitly, dest -> value) and ``args.command_line``.
    :func:`parse_full_cfg` calls it after its final parse; a script that parses with its own ``parser.parse_args``
    calls it to get the same config.
    """
    argv = _argv_or_sys(argv)
    explicit = _explicit_args(parser, argv, dests=vars(args))
    _resolve_legacy_aliases(parser, args, explicit)
    args.recurrence = effective_recurrence(args)
    args.cli_args = explicit
    args.command_line = shlex.join(argv)
    return args


def preprocess_cfg(cfg: Config, env_info: Any) -> bool:
    """Make ``cfg`` ready for a run on the env that ``env_info`` describes; False if it cannot work with that env.

    Resolves ``--recurrence=-1`` (a whole rollout with an RNN, 1 without) for configs that did not come through
    :func:`parse_full_cfg`, then runs :func:`verify_cfg`, which logs each setting that does not fit the env with
    its fix. The runners apply the same checks before any process starts and raise on a problem.
    """
    cfg.recurrence = effective_recurrence(cfg)
    return verify_cfg(cfg, env_info)


def _explicit_args(parser: argparse.ArgumentParser, args: list[str], dests: dict[str, Any]) -> dict[str, Any]:
    """Flags present on the command line, whatever their spelling (``--x=1``, ``--x 1``).

    argparse fills in a default only for attributes the namespace lacks, so parsing into a namespace
    pre-filled with a sentinel leaves the sentinel exactly where nothing was given.
    """
    unset = object()
    probe = argparse.Namespace(**{dest: unset for dest in dests})
    parser.parse_args(args, namespace=probe)
    return {dest: value for dest, value in vars(probe).items() if value is not unset}


def _resolve_legacy_aliases(parser: argparse.ArgumentParser, cfg: argparse.Namespace, explicit: dict[str, Any]) -> None:
    """Move values of 1.x flag names onto their new dest, warning once per flag used."""
    for old, new in LEGACY_ALIASES.items():
        if old not in explicit:
            continue
        value = explicit.pop(old)
        delattr(cfg, old)
        if new in explicit:
            parser.error(f"--{old} is the legacy name of --{new}: pass only --{new}")
        log.warning("--%s is deprecated and will be removed: use --%s=%s instead", old, new, value)
        setattr(cfg, new, value)
        explicit[new] = value


def default_cfg(algo: str = "APPO", env: str = "env", experiment: str = "test") -> argparse.Namespace:
    """A complete config with every default, as if only algo, env and experiment were passed."""
    argv = [f"--algo={algo}", f"--env={env}", f"--experiment={experiment}"]
    parser, _ = parse_sf_args(argv)
    return parse_full_cfg(parser, argv)
