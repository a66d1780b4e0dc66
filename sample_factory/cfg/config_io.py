"""Reading a saved experiment's ``config.json`` and merging it with the current command line.

The rule when an experiment is resumed or evaluated: the saved configuration wins, except for flags the user
typed explicitly this time (``cfg.cli_args``), which win over the saved values. Changing a default in a new
release therefore never silently changes an old experiment, while ``--train_for_env_steps=...`` on a resume
does what it says.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from sample_factory.cfg.cfg import LEGACY_ALIASES
from sample_factory.cfg.flags_extras import evaluation_flag
from sample_factory.cfg.validation import effective_recurrence
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import cfg_file, experiment_dir, log

# Describe this invocation, not the saved one: always taken from the current cfg.
BOOKKEEPING_KEYS = ("cli_args", "command_line")
# Where the config was found is authoritative: a folder copied from another machine keeps working.
LOCATION_KEYS = ("train_dir", "experiment")


def cfg_dict(cfg: Config) -> dict[str, Any]:
    """A plain-dict copy of a Namespace or AttrDict config (what config.json stores)."""
    return dict(vars(cfg)) if isinstance(cfg, argparse.Namespace) else dict(cfg)


def cfg_str(cfg: Config) -> str:
    """One ``name=value`` line per parameter, for logging the configuration a run uses."""
    params = cfg_dict(cfg)
    width = max((len(name) for name in params), default=0)
    return "\n".join(f"{name:<{width}} = {value!r}" for name, value in params.items())


def read_saved_config(path: str) -> AttrDict:
    """Load a config.json, renaming keys of legacy flags so old experiments load under the new names."""
    with open(path, encoding="utf-8") as file:
        saved = json.load(file)
    for old, new in LEGACY_ALIASES.items():
        if old in saved:
            saved.setdefault(new, saved[old])
            del saved[old]
    return AttrDict(saved)


def _missing_config_message(cfg: Config, path: str) -> str:
    train_script = evaluation_flag(cfg, "train_script") or "sf_examples.train_gym_env"  # set by the env's family
    return (
        f"no saved configuration {path}: the experiment folder {experiment_dir(cfg, mkdir=False)} has not been "
        f"trained yet. Train it first (e.g. python -m {train_script} --env={cfg.env} "
        f"--experiment={cfg.experiment} --train_dir={cfg.train_dir}) or pass the --train_dir and --experiment "
        "of an existing run"
    )


def load_from_checkpoint(cfg: Config) -> AttrDict:
    """The saved config of ``cfg``'s experiment, overridden by the flags passed explicitly this time.

    Flags added since the experiment was saved take their current values (logged). Raises FileNotFoundError
    when the experiment has no config.json.
    """
    path = cfg_file(cfg)
    if not os.path.isfile(path):
        raise FileNotFoundError(_missing_config_message(cfg, path))
    log.info("Loading existing experiment configuration from %s", path)
    return merge_saved_cfg(read_saved_config(path), cfg)


def merge_saved_cfg(saved: dict[str, Any], cfg: Config) -> AttrDict:
    """Saved values, plus current values of flags missing from them, plus explicit flags on top."""
    current = cfg_dict(cfg)
    explicit = dict(current.get("cli_args") or {})
    merged = AttrDict(saved)
    for name, value in current.items():
        if name not in merged and name not in BOOKKEEPING_KEYS:
            log.info("Adding new argument %r=%r that is not in the saved config file", name, value)
            merged[name] = value
    for name, value in explicit.items():
        if merged.get(name) != value:
            log.info("Overriding arg %r with value %r passed from command line", name, value)
        merged[name] = value
    for name in LOCATION_KEYS:
        merged[name] = current[name]
    merged["cli_args"] = AttrDict(explicit)
    merged["command_line"] = current.get("command_line", "")
    merged["recurrence"] = effective_recurrence(merged)  # an explicit --recurrence=-1 must not stay -1
    return merged


def maybe_load_from_checkpoint(cfg: Config) -> AttrDict:
    """The merged saved config when resuming an experiment that has one, otherwise ``cfg`` as an AttrDict."""
    if cfg.restart_behavior == "resume" and os.path.isfile(cfg_file(cfg)):
        return load_from_checkpoint(cfg)
    return AttrDict(cfg_dict(cfg))


def checkpoint_override_defaults(cfg: Config, parser: argparse.ArgumentParser) -> AttrDict:
    """Make the saved experiment's values the parser's defaults; return the saved config (empty if none).

    Called between :func:`parse_sf_args` and :func:`parse_full_cfg`, so ``--help`` and every flag not typed
    on the command line reflect the experiment being resumed or evaluated.
    """
    path = cfg_file(cfg)
    if not os.path.isfile(path):
        return AttrDict()
    saved = read_saved_config(path)
    known = vars(parser.parse_known_args([])[0])
    skip = set(BOOKKEEPING_KEYS) | set(LOCATION_KEYS)
    parser.set_defaults(**{name: value for name, value in saved.items() if name in known and name not in skip})
    return saved
