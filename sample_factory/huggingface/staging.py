"""The folder that is uploaded: README.md, config.json, each policy's latest checkpoint and the replay video.

The upload is assembled in a separate (temporary) folder so that the experiment folder is never written to: the
model card is a new file, and files that must not be shared (the training log, TensorBoard summaries, pickled
``env_info.pkl``, older checkpoints, milestones) are left out by construction rather than by a filter that a new
file type could slip past. Files are hard-linked when the temporary folder is on the same file system, else copied.
"""

from __future__ import annotations

import os
import shutil

from sample_factory.huggingface.experiment_reader import CONFIG_FILE, ExperimentSummary

MODEL_CARD_FILE = "README.md"
REPLAY_FILE = "replay.mp4"  # the name Sample Factory 2 repositories use for the Hub's video preview


def staged_files(summary: ExperimentSummary, with_video: bool) -> list[str]:
    """Repository paths of the upload, in the order they are listed to the user."""
    files = [MODEL_CARD_FILE, CONFIG_FILE, *(c.relative_path for c in summary.checkpoints)]
    return [*files, REPLAY_FILE] if with_video else files


def stage_upload(summary: ExperimentSummary, staging_dir: str, card_text: str, video_path: str | None) -> list[str]:
    """Fill the empty ``staging_dir`` with the upload; returns the repository paths written."""
    if os.listdir(staging_dir):
        raise ValueError(f"the staging folder {staging_dir} must be empty")
    with open(os.path.join(staging_dir, MODEL_CARD_FILE), "w", encoding="utf-8") as file:
        file.write(card_text)
    _link_or_copy(os.path.join(summary.folder, CONFIG_FILE), os.path.join(staging_dir, CONFIG_FILE))
    for checkpoint in summary.checkpoints:
        _link_or_copy(checkpoint.path, os.path.join(staging_dir, checkpoint.relative_path))
    if video_path is not None:
        _link_or_copy(video_path, os.path.join(staging_dir, REPLAY_FILE))
    return staged_files(summary, video_path is not None)


def _link_or_copy(source: str, target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed: a copy is the same bytes
        shutil.copyfile(source, target)
