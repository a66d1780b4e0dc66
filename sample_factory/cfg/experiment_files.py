"""The experiment folder on disk: ``--restart_behavior`` and writing ``config.json``.

User files are never lost silently: ``restart`` moves an old folder aside, and only ``overwrite`` (which the
user must ask for) deletes, with a warning in the log.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sample_factory.cfg.config_io import cfg_dict, load_from_checkpoint
from sample_factory.cfg.validation import ConfigError, validate_cfg
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import cfg_file, experiment_dir, log

# the replay video that enjoy --save_video writes into the experiment folder (and the Hub shows)
DEFAULT_VIDEO_NAME = "replay.mp4"


def _json_default(value: Any) -> Any:
    """Store tuples/sets as lists and numpy scalars as numbers; refuse anything json cannot round-trip."""
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(
        f"config value {value!r} of type {type(value).__name__} cannot be saved to config.json: "
        "flags must hold numbers, strings, booleans, None or lists of them"
    )


def save_config(cfg: Config) -> str:
    """Write every parameter (defaults, cli_args and command_line included) to config.json; return its path.

    Written to a temp file in the same folder and renamed into place, so a crash mid-write never leaves a
    truncated config.json that would make the experiment impossible to resume.
    """
    folder = experiment_dir(cfg)
    path = cfg_file(cfg)
    fd, tmp_path = tempfile.mkstemp(dir=folder, prefix=".config.json.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(cfg_dict(cfg), file, indent=2, default=_json_default)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_path)
        raise
    return path


def prepare_experiment_dir(cfg: Config) -> Config:
    """Apply ``--restart_behavior`` to the experiment folder and return the config the run should use.

    The config is validated before anything on disk is touched (after merging with the saved config when
    resuming), so a typo never moves or deletes an experiment. Call :func:`save_config` on the result.
    """
    actions: dict[str, Callable[[Config], Config]] = {
        "resume": _resume,
        "restart": _restart,
        "overwrite": _overwrite,
    }
    action = actions.get(cfg.restart_behavior)
    if action is None:
        raise ConfigError(f"--restart_behavior={cfg.restart_behavior} is unknown: use one of {', '.join(actions)}")
    return action(cfg)


def _resume(cfg: Config) -> Config:
    if not os.path.isfile(cfg_file(cfg)):
        validate_cfg(cfg)
        log.info("No saved experiment in %s: starting a new one", experiment_dir(cfg, mkdir=False))
        return cfg
    merged = load_from_checkpoint(cfg)
    validate_cfg(merged)
    return merged


def _aside_path(folder: str) -> str:
    stamp = datetime.now().strftime("%Y%m%d_%H%M%S")
    candidate = f"{folder}_old_{stamp}"
    suffix = 1
    while os.path.exists(candidate):  # two restarts within one second
        suffix += 1
        candidate = f"{folder}_old_{stamp}_{suffix}"
    return candidate


def _restart(cfg: Config) -> Config:
    validate_cfg(cfg)
    folder = os.path.normpath(experiment_dir(cfg, mkdir=False))
    if os.path.exists(folder):
        target = _aside_path(folder)
        os.rename(folder, target)
        log.warning("--restart_behavior=restart: moved the existing experiment %s aside to %s", folder, target)
    return cfg


def _overwrite(cfg: Config) -> Config:
    validate_cfg(cfg)
    folder = os.path.normpath(experiment_dir(cfg, mkdir=False))
    if os.path.exists(folder):
        log.warning("--restart_behavior=overwrite: deleting the existing experiment %s and all its files", folder)
        shutil.rmtree(folder)
    return cfg


def already_finished(cfg: Config) -> bool:
    """A resumed experiment whose ``done`` marker already covers ``--train_for_env_steps`` has nothing to do.

    A marker below the target is removed (the target was raised: training continues).
    """
    marker = os.path.join(experiment_dir(cfg, mkdir=False), "done")
    if cfg.restart_behavior != "resume" or not os.path.isfile(marker):
        return False
    with open(marker) as f:
        text = f.read().strip()
    done_steps = int(text) if text.isdigit() else 0
    if done_steps < cfg.train_for_env_steps:
        os.remove(marker)
        return False
    log.info(
        "Experiment %s already finished (%d env steps >= --train_for_env_steps=%d). Raise --train_for_env_steps to "
        "continue it, or pass --restart_behavior=restart to start a new one (the old folder is moved aside).",
        experiment_dir(cfg, mkdir=False),
        done_steps,
        cfg.train_for_env_steps,
    )
    return True
