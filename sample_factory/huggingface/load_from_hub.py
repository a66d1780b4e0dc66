"""Download a shared agent from the Hugging Face Hub: ``python -m sample_factory.huggingface.load_from_hub``.

    python -m sample_factory.huggingface.load_from_hub -r USER/REPO -d TRAIN_DIR

The repository becomes the experiment ``TRAIN_DIR/REPO``, so enjoy, eval and training (to continue it) work on it
with ``--experiment=REPO --train_dir=TRAIN_DIR``. An existing folder of that name is never touched: the download
stops with an error instead. Files arrive in a temporary folder inside TRAIN_DIR that is renamed into place only
once the download is complete and holds a config.json, so an interrupted download never looks like an experiment
(:func:`sample_factory.huggingface.download.load_experiment`, the library part).
"""

from __future__ import annotations

import argparse
import os
import sys

from sample_factory.cfg.config_io import read_saved_config
from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.huggingface.card_facts import scripts_for
from sample_factory.huggingface.download import load_experiment as load_experiment
from sample_factory.huggingface.experiment_reader import CONFIG_FILE
from sample_factory.huggingface.hub_client import HubError
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode

DEFAULT_TRAIN_DIR = "./train_dir"


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
