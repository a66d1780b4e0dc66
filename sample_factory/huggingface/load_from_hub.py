"""Download a shared agent from the Hugging Face Hub: ``python -m sample_factory.huggingface.load_from_hub``.

    python -m sample_factory.huggingface.load_from_hub -r USER/REPO -d TRAIN_DIR

The repository becomes the experiment ``TRAIN_DIR/REPO``, so enjoy, eval and training (to continue it) work on it
with ``--experiment=REPO --train_dir=TRAIN_DIR``. An existing folder of that name is never touched: the download
stops with an error instead. Files arrive in a temporary folder inside TRAIN_DIR that is renamed into place only
once the download is complete and holds a config.json, so an interrupted download never looks like an experiment.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

from sample_factory.cfg.config_io import read_saved_config
from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.huggingface.card_facts import scripts_for
from sample_factory.huggingface.experiment_reader import CONFIG_FILE
from sample_factory.huggingface.hub_client import HubError, check_repo_id, download_repo, import_hub
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode

DEFAULT_TRAIN_DIR = "./train_dir"
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


def enjoy_command(folder: str) -> str:
    """The command that watches the downloaded experiment, as its model card names it."""
    config = read_saved_config(os.path.join(folder, CONFIG_FILE))
    train_dir, name = os.path.split(os.path.normpath(folder))
    return (
        f"python -m {scripts_for(config).enjoy} --env={config.get('env')} --experiment={name} --train_dir={train_dir}"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m sample_factory.huggingface.load_from_hub",
        description="Download an experiment shared on the Hugging Face Hub into TRAIN_DIR/<repository name>.",
    )
    parser.add_argument("-r", "--hf_repository", required=True, help="Hub repository USER/REPO to download.")
    parser.add_argument(
        "-d", "--train_dir", default=DEFAULT_TRAIN_DIR, help="Where the experiment folder is created (its --train_dir)."
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> StatusCode:
    args = parse_args(argv)
    try:
        folder = load_experiment(args.hf_repository, args.train_dir)
    except (HubError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    log.info("Downloaded %s to %s", args.hf_repository, folder)
    log.info("Watch it: %s", enjoy_command(folder))
    return ExperimentStatus.SUCCESS


if __name__ == "__main__":
    sys.exit(main())
