"""Sample Factory 2's Hub functions, for scripts written against them: model card, replay video, upload, download.

Each takes SF2's arguments and calls this package's Hub code: ``generate_model_card`` writes the card an upload
would carry, ``push_to_hf`` uploads an experiment folder, ``load_from_hf`` downloads one into a train_dir and
``generate_replay_video`` writes rendered frames as the folder's replay video. The upload and download take
``endpoint`` and ``token`` keywords besides (default: ``HF_ENDPOINT`` / ``HF_TOKEN`` or the logged-in account).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from sample_factory.cfg.experiment_files import DEFAULT_VIDEO_NAME
from sample_factory.envs.env_utils import require_optional_module
from sample_factory.huggingface.card_facts import (
    Evaluation,
    flags_differing_from_defaults,
    library_version,
    scripts_for,
)
from sample_factory.huggingface.download import load_experiment
from sample_factory.huggingface.experiment_reader import read_experiment
from sample_factory.huggingface.model_card import CardInputs, render_model_card
from sample_factory.huggingface.staging import REPLAY_FILE
from sample_factory.huggingface.upload import CardExtras, push_experiment
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.logging_setup import log

MODEL_CARD_FILE = "README.md"


def generate_model_card(
    dir_path: str,
    algo: str,
    env: str,
    repo_id: str,
    rewards: Sequence[float] | None = None,
    enjoy_name: str | None = None,
    train_name: str | None = None,
) -> str:
    """Write the model card (``README.md``) of the experiment in ``dir_path`` for the Hub repository ``repo_id``.

    ``algo`` and ``env`` are the names the card states; ``rewards`` (episode rewards of an evaluation) become its
    headline result; ``train_name`` / ``enjoy_name`` are the modules its commands run (default: the env's
    scripts). The card shows the folder's replay video when it has one. Returns the card's path.
    """
    summary = read_experiment(dir_path)
    config = AttrDict({**summary.config, "algo": algo, "env": env})
    summary = dataclasses.replace(summary, config=config)
    has_video = os.path.isfile(os.path.join(summary.folder, DEFAULT_VIDEO_NAME))
    card = CardInputs(
        repo_id=repo_id,
        summary=summary,
        scripts=scripts_for(config, train_name, enjoy_name),
        flag_changes=flags_differing_from_defaults(config),
        evaluation=Evaluation(tuple(float(r) for r in rewards)) if rewards else None,
        video=REPLAY_FILE if has_video else None,
        library_version=library_version(),
    )
    path = os.path.join(summary.folder, MODEL_CARD_FILE)
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_model_card(card))
    return path


def generate_replay_video(dir_path: str, frames: Sequence[np.ndarray], fps: float, cfg: Any = None) -> str:
    """Write ``frames`` (RGB ``[H, W, 3]`` arrays) as an mp4 in ``dir_path``; returns its path.

    The file is ``cfg.video_name`` when the config sets one, else ``replay.mp4`` (the name ``push_to_hf`` and
    the Hub's preview expect). Needs OpenCV (the ``video`` extra).
    """
    if not frames:
        raise ValueError(f"generate_replay_video got no frames for {dir_path}: render the episode first")
    cv2 = require_optional_module("cv2", extra="video", what="Writing a replay video")
    name = getattr(cfg, "video_name", None) or DEFAULT_VIDEO_NAME
    path = os.path.join(dir_path, name)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    height, width = np.asarray(frames[0]).shape[:2]
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"mp4v"), float(fps), (width, height))
    if not writer.isOpened():
        writer.release()
        raise OSError(f"OpenCV cannot write {path}: check the folder's permissions and that the mp4v codec exists")
    try:
        for frame in frames:
            writer.write(cv2.cvtColor(np.ascontiguousarray(frame, dtype=np.uint8), cv2.COLOR_RGB2BGR))
    finally:
        writer.release()
    log.info("Saved a replay of %d frames to %s", len(frames), path)
    return path


def push_to_hf(dir_path: str, repo_name: str, *, endpoint: str | None = None, token: str | None = None) -> str:
    """Upload the experiment in ``dir_path`` (card, config.json, latest checkpoints, ``replay.mp4`` if present) to
    the Hub repository ``repo_name`` (``USER/REPO``, created if missing); returns the commit's URL."""
    video = os.path.join(dir_path, DEFAULT_VIDEO_NAME)
    extras = CardExtras(video_path=video if os.path.isfile(video) else None)
    return push_experiment(dir_path, repo_name, extras, endpoint=endpoint, token=token)


def load_from_hf(dir_path: str, repo_id: str, *, endpoint: str | None = None, token: str | None = None) -> str:
    """Download the Hub repository ``repo_id`` into the train_dir ``dir_path`` as ``dir_path/<repo name>``; returns
    that folder (an existing one is left alone and reported as an error)."""
    return load_experiment(repo_id, dir_path, endpoint=endpoint, token=token)
