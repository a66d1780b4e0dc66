"""Sample Factory 2's ``sample_factory.utils.utils``: the names user code imports from here, gathered from the modules
that own each topic, plus a few one-line helpers.

Folders and files of an experiment live in :mod:`~sample_factory.utils.paths`, the logger in
:mod:`~sample_factory.utils.logging_setup`, process control (CPU pinning, killing, reaping) in
:mod:`~sample_factory.utils.processes`, Git provenance in :mod:`~sample_factory.utils.git_info`, array helpers in
:mod:`~sample_factory.utils.numeric`, retrying queue calls in :mod:`~sample_factory.utils.queues`, decorators in
:mod:`~sample_factory.utils.decorators`; new code may import from those directly.
"""

from __future__ import annotations

import importlib.util
from argparse import ArgumentTypeError

import psutil

from sample_factory.utils.decorators import retry, static_vars
from sample_factory.utils.git_info import get_git_commit_hash, git_root, save_git_diff
from sample_factory.utils.logging_setup import debug_log_every_n, has_file_handler, log, log_every_n
from sample_factory.utils.logging_setup import init_experiment_file_logger as init_file_logger
from sample_factory.utils.misc import set_attr_if_exists
from sample_factory.utils.numeric import (
    ensure_contigious,
    max_with_idx,
    min_with_idx,
    numpy_all_the_way,
    numpy_flatten,
    op_with_idx,
    scale_to_range,
)
from sample_factory.utils.paths import (
    cfg_file,
    cfg_file_old,
    checkpoint_dir,
    ensure_dir_exists,
    experiment_dir,
    experiments_dir,
    get_free_disk_space_mb,
    get_username,
    maybe_ensure_dir_exists,
    project_tmp_dir,
    remove_if_exists,
    safe_ensure_dir_exists,
    summaries_dir,
    wandb_dir,
)
from sample_factory.utils.plot import figure_to_numpy
from sample_factory.utils.processes import (
    cores_for_worker_process,
    join_or_kill,
    kill,
    kill_processes,
    list_child_processes,
    set_process_cpu_affinity,
)
from sample_factory.utils.queues import safe_get, safe_put, safe_put_many

__all__ = [
    "log",
    "str2bool",
    "is_module_available",
    "memory_consumption_mb",
    # paths
    "experiments_dir",
    "experiment_dir",
    "summaries_dir",
    "checkpoint_dir",
    "wandb_dir",
    "cfg_file",
    "cfg_file_old",
    "project_tmp_dir",
    "ensure_dir_exists",
    "safe_ensure_dir_exists",
    "maybe_ensure_dir_exists",
    "remove_if_exists",
    "get_username",
    "get_free_disk_space_mb",
    # logging
    "init_file_logger",
    "has_file_handler",
    "log_every_n",
    "debug_log_every_n",
    # processes
    "cores_for_worker_process",
    "set_process_cpu_affinity",
    "list_child_processes",
    "kill",
    "kill_processes",
    "join_or_kill",
    # git
    "git_root",
    "get_git_commit_hash",
    "save_git_diff",
    # arrays and plots
    "op_with_idx",
    "max_with_idx",
    "min_with_idx",
    "numpy_all_the_way",
    "numpy_flatten",
    "scale_to_range",
    "ensure_contigious",
    "figure_to_numpy",
    # queues
    "safe_get",
    "safe_put",
    "safe_put_many",
    # decorators and attributes
    "static_vars",
    "retry",
    "set_attr_if_exists",
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


def is_module_available(module_name: str) -> bool:
    """Whether ``module_name`` can be imported, found without importing it (to check optional dependencies)."""
    return importlib.util.find_spec(module_name) is not None


def memory_consumption_mb() -> float:
    """Resident memory of this process in MB."""
    return psutil.Process().memory_info().rss / 1e6
