"""Downloading a shared experiment from the Hugging Face Hub into a train_dir: the library part of ``load_from_hub``.

An existing folder of the repository's name is never touched: the download stops with an error instead. Files
arrive in a temporary folder inside the train_dir that is renamed into place only once the download is complete
and holds a config.json, so an interrupted download never looks like an experiment.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from sample_factory.huggingface.experiment_reader import CONFIG_FILE
from sample_factory.huggingface.hub_client import HubError, check_repo_id, download_repo, import_hub

CLIENT_METADATA_DIR = ".cache"  # what huggingface_hub keeps inside a download folder to resume it


def load_experiment(repo_id: str, train_dir: str, *, endpoint: str | None = None, token: str | None = None) -> str:
    """Download ``repo_id`` into ``train_dir/<repo name>``; returns that folder."""
    check_repo_id(repo_id)
    import_hub()
    name = repo_id.split("/")[-1]
    target = os.path.join(train_dir, name)
    if os.path.lexists(target):
        raise HubError(
            f"{target} already exists and is left as it is: pass another -d TRAIN_DIR, or move that folder away "
            "and load again"
        )
    os.makedirs(train_dir, exist_ok=True)
    partial = tempfile.mkdtemp(prefix=f".{name}.download_", dir=train_dir)
    try:
        download_repo(repo_id, partial, endpoint=endpoint, token=token)
        _check_is_experiment(partial, repo_id)
        shutil.rmtree(os.path.join(partial, CLIENT_METADATA_DIR), ignore_errors=True)
        os.rename(partial, target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return target


def _check_is_experiment(folder: str, repo_id: str) -> None:
    if not os.path.isfile(os.path.join(folder, CONFIG_FILE)):
        raise HubError(
            f"{repo_id} has no {CONFIG_FILE}, so it is not a sample_factory experiment (push one with python -m "
            "sample_factory.huggingface.push_to_hub); nothing was kept"
        )
