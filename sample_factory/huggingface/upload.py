"""Uploading an experiment to the Hugging Face Hub: model card, config.json, latest checkpoints, replay video.

The library part of the Hub integration: ``push_to_hub``'s command line and the enjoy scripts' ``--push_to_hub``
both call it. It records nothing itself (the command line has enjoy record a replay when the experiment has none).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from sample_factory.cfg.experiment_files import DEFAULT_VIDEO_NAME
from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError
from sample_factory.huggingface.card_facts import (
    Evaluation,
    flags_differing_from_defaults,
    library_version,
    scripts_for,
)
from sample_factory.huggingface.experiment_reader import ExperimentFolderError, ExperimentSummary, read_experiment
from sample_factory.huggingface.hub_client import HubError, check_repo_id, import_hub, upload_folder
from sample_factory.huggingface.model_card import CardInputs, render_model_card
from sample_factory.huggingface.staging import REPLAY_FILE, stage_upload
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode
from sample_factory.utils.utils import experiment_dir

# errors that end a push with a message and exit status 1, never a traceback
PUSH_ERRORS = (HubError, ExperimentFolderError, MissingDependencyError, UnknownEnvError)


@dataclass(frozen=True)
class CardExtras:
    """What an upload adds to the experiment folder: the evaluation and replay video of a run just watched, and the
    scripts the model card names (by default those of config.json, else the env family's)."""

    evaluation: Evaluation | None = None
    video_path: str | None = None
    train_script: str | None = None
    enjoy_script: str | None = None


def push_experiment(
    folder: str,
    repo_id: str,
    extras: CardExtras = CardExtras(),
    *,
    private: bool = False,
    endpoint: str | None = None,
    token: str | None = None,
) -> str:
    """Upload the experiment in ``folder`` to ``repo_id`` (created if missing); returns the commit URL."""
    check_repo_id(repo_id)
    import_hub()  # before any work: a missing package is reported first
    summary = read_experiment(folder)
    with tempfile.TemporaryDirectory(prefix="sf_hub_upload_") as staging:
        files = stage_experiment(summary, repo_id, staging, extras)
        log.info("Uploading to %s: %s", repo_id, ", ".join(files))
        message = f"Upload {summary.name} ({summary.env}) with sample_factory"
        url = upload_folder(staging, repo_id, commit_message=message, private=private, endpoint=endpoint, token=token)
    log.info("Pushed %s to %s", summary.folder, url)
    return url


def stage_experiment(
    summary: ExperimentSummary, repo_id: str, staging_dir: str, extras: CardExtras = CardExtras()
) -> list[str]:
    """Write what :func:`push_experiment` uploads into the empty ``staging_dir``; returns the repository paths."""
    card = CardInputs(
        repo_id=repo_id,
        summary=summary,
        scripts=scripts_for(summary.config, extras.train_script, extras.enjoy_script),
        flag_changes=flags_differing_from_defaults(summary.config),
        evaluation=extras.evaluation,
        video=REPLAY_FILE if extras.video_path is not None else None,
        library_version=library_version(),
    )
    return stage_upload(summary, staging_dir, render_model_card(card), extras.video_path)


# ---- after enjoy -----------------------------------------------------------------------------------------------


def push_after_enjoy(cfg: AttrDict, rewards: list[float]) -> StatusCode:
    """Upload ``cfg``'s experiment with the video and episode rewards enjoy just recorded (``--push_to_hub``)."""
    video = _recorded_video(cfg)
    if cfg.load_checkpoint_kind == "best":
        log.warning(
            "--load_checkpoint_kind=best: the replay and evaluation show the best checkpoint, but the upload holds "
            "each policy's latest checkpoint"
        )
    try:
        evaluation = Evaluation(tuple(rewards), int(cfg.policy_index or 0))
        extras = CardExtras(evaluation, video, cfg.train_script, cfg.enjoy_script)
        push_experiment(experiment_dir(cfg, mkdir=False), cfg.hf_repository, extras)
    except PUSH_ERRORS as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return ExperimentStatus.SUCCESS


def _recorded_video(cfg: AttrDict) -> str | None:
    if not cfg.save_video:
        return None
    path = os.path.join(experiment_dir(cfg, mkdir=False), cfg.video_name or DEFAULT_VIDEO_NAME)
    if os.path.isfile(path):
        return path
    log.warning("No video was written to %s: uploading without a replay", path)
    return None
