"""Facts a model card states beyond the files: flags changed from their defaults, the scripts, the evaluation.

Defaults are those a new run of the same env gets: Sample Factory's, with the env family's own flags and defaults
on top (found through the env-family registry, as ``sample_factory.eval`` finds them). A flag is listed when its
saved value differs from that default or when it was typed on the training command line.
"""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from sample_factory.cfg.arguments import parse_sf_args
from sample_factory.cfg.config_io import BOOKKEEPING_KEYS, LOCATION_KEYS
from sample_factory.cfg.validation import effective_recurrence
from sample_factory.envs.env_families import add_family_args, discover_env_families, family_of
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.logging_setup import log

DEFAULT_TRAIN_SCRIPT = "sf_examples.train_gym_env"
DEFAULT_ENJOY_SCRIPT = "sf_examples.enjoy_gym_env"
UNKNOWN_DEFAULT = "(family flag)"  # shown as the default of a typed flag whose family could not be loaded
# where the card's values live or what they describe, not how the agent was trained
_NOT_TRAINING_FLAGS = {*BOOKKEEPING_KEYS, *LOCATION_KEYS, "env"}


@dataclass(frozen=True)
class FlagChange:
    """One flag whose saved value is not the default (``typed``: it was on the training command line)."""

    name: str
    value: Any
    default: Any
    typed: bool


@dataclass(frozen=True)
class Scripts:
    """Modules that train and watch this env, for the card's command lines."""

    train: str
    enjoy: str


@dataclass(frozen=True)
class Evaluation:
    """Episode rewards of the run that recorded the replay (one entry per finished episode and agent)."""

    rewards: tuple[float, ...]
    policy_index: int = 0

    @property
    def mean(self) -> float:
        return float(np.mean(self.rewards)) if self.rewards else math.nan

    @property
    def std(self) -> float:
        return float(np.std(self.rewards)) if self.rewards else math.nan

    def __bool__(self) -> bool:
        return bool(self.rewards)


def library_version() -> str:
    try:
        return version("sample-factory")
    except PackageNotFoundError:  # run from a checkout that is not pip-installed
        return "unknown"


# ---- flags -----------------------------------------------------------------------------------------------------


def flags_differing_from_defaults(config: AttrDict) -> list[FlagChange]:
    """Training flags of ``config`` that a new run of its env would not get by default, in the saved order."""
    defaults = training_defaults(str(config.get("env")))
    typed = dict(config.get("cli_args") or {})
    changes = []
    for name, value in config.items():
        if name in _NOT_TRAINING_FLAGS or (name not in defaults and name not in typed):
            continue
        default = defaults.get(name, UNKNOWN_DEFAULT)
        if name == "recurrence" and default == -1:
            default = effective_recurrence(AttrDict({**config, "recurrence": -1}))
        if name in typed or not _same_value(value, default):
            changes.append(FlagChange(name, value, default, name in typed))
    return changes


def training_defaults(env: str) -> dict[str, Any]:
    """Every training flag's default for ``env``: Sample Factory's plus its family's (when the family loads)."""
    argv = [f"--env={env}"]
    parser, _ = parse_sf_args(argv)
    discover_env_families()
    try:
        add_family_args(parser, env)
    except Exception as exc:  # a family hook may need a simulator that is not installed here
        log.warning(
            "Env family flags of %s not loaded (%s): the card compares with Sample Factory's defaults", env, exc
        )
    return vars(parser.parse_known_args(argv)[0])


def _same_value(saved: Any, default: Any) -> bool:
    """Equal after a JSON round trip (tuples become lists) and numerically (1e9 equals 1000000000)."""
    saved, default = _as_json(saved), _as_json(default)
    if isinstance(saved, (int, float)) and isinstance(default, (int, float)) and not isinstance(saved, bool):
        return float(saved) == float(default)
    return saved == default


def _as_json(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return repr(value)


# ---- scripts ---------------------------------------------------------------------------------------------------


def scripts_for(config: AttrDict, train_script: str | None = None, enjoy_script: str | None = None) -> Scripts:
    """Typed scripts win, then the config's, then the env family's train script and its ``enjoy_`` twin.

    The twin (``pkg.train_x`` -> ``pkg.enjoy_x``) is named only when that module exists; otherwise the generic
    Gymnasium scripts are named.
    """
    train = train_script or config.get("train_script") or _family_train_script(str(config.get("env")))
    enjoy = enjoy_script or config.get("enjoy_script") or _enjoy_twin(train) or DEFAULT_ENJOY_SCRIPT
    return Scripts(train=train, enjoy=enjoy)


def _family_train_script(env: str) -> str:
    discover_env_families()
    family = family_of(env)
    return family.train_script if family is not None else DEFAULT_TRAIN_SCRIPT


def _enjoy_twin(train_script: str) -> str | None:
    package, _, module = train_script.rpartition(".")
    if not module.startswith("train_"):
        return None
    name = "enjoy_" + module.removeprefix("train_")
    twin = f"{package}.{name}" if package else name
    try:
        return twin if importlib.util.find_spec(twin) is not None else None
    except (ImportError, ValueError):
        return None
