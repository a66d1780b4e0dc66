"""Path and small utility functions of Sample Factory 2's public ``sample_factory.utils.utils`` module.

The logger lives in :mod:`sample_factory.utils.logging_setup`, CPU pinning in :mod:`sample_factory.utils.processes`
and ``static_vars`` in :mod:`sample_factory.utils.decorators`; they are re-exported here because user code imports
them from this module.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from argparse import ArgumentTypeError
from os.path import join

import psutil

from sample_factory.utils.decorators import static_vars
from sample_factory.utils.logging_setup import log
from sample_factory.utils.processes import cores_for_worker_process
from sample_factory.utils.typing import Config

__all__ = [
    "log",
    "str2bool",
    "experiment_dir",
    "summaries_dir",
    "checkpoint_dir",
    "cfg_file",
    "ensure_dir_exists",
    "safe_ensure_dir_exists",
    "cores_for_worker_process",
    "static_vars",
    "project_tmp_dir",
    "is_module_available",
    "debug_log_every_n",
    "memory_consumption_mb",
]

_TRUE = {"yes", "true", "t", "y", "1"}
_FALSE = {"no", "false", "f", "n", "0"}


def str2bool(v: str | bool) -> bool:
    """Parse a command-line boolean (``True``/``False``, ``yes``/``no``, ``1``/``0``, any case)."""
    if isinstance(v, bool):
        return v
    lowered = str(v).strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ArgumentTypeError(f"{v!r} is not a boolean: use True or False")


def safe_ensure_dir_exists(path: str) -> str:
    """Create ``path`` and its parents if missing and return it; safe when other processes create it at the same time.

    Workers of one run create the same folders concurrently: "already exists" is success, not an error, unless what
    exists is a file.
    """
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError as exc:
        raise NotADirectoryError(f"{path} exists but is not a directory: remove it or choose another path") from exc
    return path


def ensure_dir_exists(path: str) -> str:
    """Create ``path`` if missing and return it (the same as :func:`safe_ensure_dir_exists`)."""
    return safe_ensure_dir_exists(path)


def experiment_dir(cfg: Config, mkdir: bool = True) -> str:
    """``{train_dir}/{experiment}``, the folder that holds everything a run writes."""
    path = join(cfg.train_dir, cfg.experiment)
    return ensure_dir_exists(path) if mkdir else path


def summaries_dir(experiment_path: str, mkdir: bool = True) -> str:
    path = join(experiment_path, ".summary")
    return ensure_dir_exists(path) if mkdir else path


def checkpoint_dir(cfg: Config, policy_id: int, mkdir: bool = True) -> str:
    path = join(experiment_dir(cfg, mkdir), f"checkpoint_p{policy_id}")
    return ensure_dir_exists(path) if mkdir else path


def cfg_file(cfg: Config) -> str:
    return join(experiment_dir(cfg, mkdir=False), "config.json")


def project_tmp_dir(mkdir: bool = True) -> str:
    path = join(tempfile.gettempdir(), f"sf2_{os.getuid()}")
    return ensure_dir_exists(path) if mkdir else path


def is_module_available(module_name: str) -> bool:
    return importlib.util.find_spec(module_name) is not None


_log_counters: dict[str, int] = {}


def debug_log_every_n(n: int, msg: str, *args, key: str | None = None) -> None:
    """Log ``msg`` at debug level once every ``n`` calls (counted per message)."""
    key = key or msg
    count = _log_counters.get(key, 0)
    if count % n == 0:
        log.debug(msg, *args)
    _log_counters[key] = count + 1


def memory_consumption_mb() -> float:
    """Resident memory of this process in MB."""
    return psutil.Process().memory_info().rss / 1e6
