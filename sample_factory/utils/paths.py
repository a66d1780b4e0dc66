"""Where a run's files go: the train dir, the experiment folder and its parts, and small file-system helpers.

Layout of one experiment (``{train_dir}/{experiment}/``): ``config.json``, ``sf_log.txt``, ``.summary/`` (TensorBoard
events), ``checkpoint_p{N}/`` (one per policy) and ``wandb/`` (W&B's local files, with ``--with_wandb``).
"""

from __future__ import annotations

import getpass
import os
import shutil
import tempfile
from os.path import join
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the alias pulls in gymnasium, which path helpers do not need at run time
    from sample_factory.utils.typing import Config

__all__ = [
    "safe_ensure_dir_exists",
    "ensure_dir_exists",
    "maybe_ensure_dir_exists",
    "remove_if_exists",
    "experiments_dir",
    "experiment_dir",
    "summaries_dir",
    "checkpoint_dir",
    "wandb_dir",
    "cfg_file",
    "cfg_file_old",
    "project_tmp_dir",
    "get_username",
    "get_free_disk_space_mb",
]

CONFIG_FILE_NAME = "config.json"
# the name Sample Factory 1 gave the saved config; read only to find configs of old experiments
OLD_CONFIG_FILE_NAME = "cfg.json"
SUMMARIES_DIR_NAME = ".summary"
WANDB_DIR_NAME = "wandb"


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


def maybe_ensure_dir_exists(path: str, mkdir: bool) -> str:
    """``path``, created first when ``mkdir`` is true: the one switch behind every ``*_dir(..., mkdir)`` function."""
    return ensure_dir_exists(path) if mkdir else path


def remove_if_exists(file: str) -> bool:
    """Delete the file ``file`` if it is there; True when something was deleted. A folder is refused, not removed."""
    if os.path.isdir(file):
        raise IsADirectoryError(f"remove_if_exists({file!r}) removes files only: delete the folder with shutil.rmtree")
    try:
        os.remove(file)
    except FileNotFoundError:
        return False
    return True


def experiments_dir(cfg: Config, mkdir: bool = True) -> str:
    """``--train_dir``, the folder holding every experiment's folder."""
    return maybe_ensure_dir_exists(cfg.train_dir, mkdir)


def experiment_dir(cfg: Config, mkdir: bool = True) -> str:
    """``{train_dir}/{experiment}``, the folder that holds everything a run writes."""
    return maybe_ensure_dir_exists(join(cfg.train_dir, cfg.experiment), mkdir)


def summaries_dir(experiment_dir_: str, mkdir: bool = True) -> str:
    """``{experiment folder}/.summary``, where the TensorBoard event files of the run go."""
    return maybe_ensure_dir_exists(join(experiment_dir_, SUMMARIES_DIR_NAME), mkdir)


def checkpoint_dir(cfg: Config, policy_id: int, mkdir: bool = True) -> str:
    """``{experiment folder}/checkpoint_p{policy_id}``, the checkpoints of one policy."""
    return maybe_ensure_dir_exists(join(experiment_dir(cfg, mkdir), f"checkpoint_p{policy_id}"), mkdir)


def wandb_dir(cfg: Config, mkdir: bool = True) -> str:
    """``{experiment folder}/wandb``, where W&B keeps its local copy of the run (W&B names the subfolder itself)."""
    return maybe_ensure_dir_exists(join(experiment_dir(cfg, mkdir), WANDB_DIR_NAME), mkdir)


def cfg_file(cfg: Config) -> str:
    """``{experiment folder}/config.json``, the configuration saved at the start of a run and read on resume."""
    return join(experiment_dir(cfg, mkdir=False), CONFIG_FILE_NAME)


def cfg_file_old(cfg: Config) -> str:
    """``{experiment folder}/cfg.json``, where experiments of Sample Factory 1 kept their configuration."""
    return join(experiment_dir(cfg, mkdir=False), OLD_CONFIG_FILE_NAME)


def get_username() -> str:
    """The login name of the user running this process (from the environment, else the password database)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid without a passwd entry (some containers) and no LOGNAME/USER variable
        return f"uid{os.getuid()}"


def project_tmp_dir(mkdir: bool = True) -> str:
    """A per-user scratch folder under the system temp dir, shared by every run of that user."""
    return maybe_ensure_dir_exists(join(tempfile.gettempdir(), f"sf2_{os.getuid()}"), mkdir)


def get_free_disk_space_mb(cfg: Config) -> float:
    """Free space, in MB, on the file system that holds ``--train_dir`` (where checkpoints are written).

    A train dir that does not exist yet is measured at its nearest existing parent, the file system it will be on.
    """
    path = os.path.abspath(cfg.train_dir)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return shutil.disk_usage(path).free / (1024 * 1024)
