"""Share a trained experiment on the Hugging Face Hub: ``python -m sample_factory.huggingface.push_to_hub``.

    python -m sample_factory.huggingface.push_to_hub -r USER/REPO -d TRAIN_DIR/EXPERIMENT

Uploads a model card (README.md), config.json, the latest checkpoint of each policy and a replay video. The video
is the experiment's ``replay.mp4`` when it has one (``enjoy --save_video`` writes it); otherwise enjoy records it
now, with the episodes' rewards as the card's evaluation (``--no_video`` uploads without one). The enjoy scripts
call ``upload.push_after_enjoy`` for ``--push_to_hub --hf_repository=USER/REPO``, after their own recording.
"""

from __future__ import annotations

import argparse
import os
import sys

from sample_factory.cfg.experiment_files import DEFAULT_VIDEO_NAME
from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError
from sample_factory.huggingface.card_facts import (
    Evaluation,
)
from sample_factory.huggingface.experiment_reader import ExperimentSummary, read_experiment
from sample_factory.huggingface.hub_client import HubError, check_repo_id, import_hub
from sample_factory.huggingface.upload import PUSH_ERRORS, CardExtras, push_experiment
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode

# ---- command line ----------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m sample_factory.huggingface.push_to_hub",
        description="Upload a trained experiment (model card, config.json, latest checkpoints, replay video) to "
        "the Hugging Face Hub. Log in first: hf auth login (or set HF_TOKEN).",
    )
    parser.add_argument("-r", "--hf_repository", required=True, help="Hub repository USER/REPO (created if missing).")
    parser.add_argument("-d", "--experiment_dir", required=True, help="The experiment folder TRAIN_DIR/EXPERIMENT.")
    parser.add_argument(
        "--no_video", action="store_true", help="Upload no replay (neither the experiment's replay.mp4 nor a new one)."
    )
    parser.add_argument("--max_num_episodes", type=int, default=10, help="Episodes of a replay recorded now.")
    parser.add_argument("--video_frames", type=int, default=1000, help="Length limit of a replay recorded now.")
    parser.add_argument("--private", action="store_true", help="Create the repository as private.")
    parser.add_argument("--train_script", default=None, help="Training module the card names (default: the env's).")
    parser.add_argument("--enjoy_script", default=None, help="Enjoy module the card names (default: the env's).")
    parser.add_argument(
        "--registration_func",
        default=None,
        help="module:function that registers a custom env, to record a replay of an env no installed family owns.",
    )
    return parser.parse_args(argv)


def record_replay(args: argparse.Namespace, env: str) -> tuple[str, Evaluation]:
    """Run enjoy with ``--save_video`` on the experiment; returns the video path and the episodes' rewards.

    Only called when the experiment has no ``replay.mp4``, so nothing of the user's is overwritten.
    """
    from sample_factory.enjoy import EnjoyResults, enjoy
    from sample_factory.envs.env_families import discover_env_families
    from sample_factory.eval import parse_eval_args, register_eval_env

    folder = os.path.abspath(args.experiment_dir)
    argv = [
        f"--env={env}",
        f"--train_dir={os.path.dirname(folder)}",
        f"--experiment={os.path.basename(folder)}",
        "--save_video",
        f"--video_frames={args.video_frames}",
        f"--max_num_episodes={args.max_num_episodes}",
        *([f"--registration_func={args.registration_func}"] if args.registration_func else []),
    ]
    discover_env_families()
    cfg = parse_eval_args(argv)
    try:
        register_eval_env(cfg)
    except (UnknownEnvError, MissingDependencyError) as exc:
        raise HubError(
            f"cannot record a replay of {env}: {exc}. Pass --no_video to upload without one (or "
            "--registration_func=module:function for a custom env)"
        ) from exc
    results = EnjoyResults()
    status, _ = enjoy(cfg, results)
    video = os.path.join(folder, DEFAULT_VIDEO_NAME)
    if status != ExperimentStatus.SUCCESS or not os.path.isfile(video):
        raise HubError(
            f"recording a replay of {folder} failed (see the errors above): fix it, or pass --no_video to upload "
            "without a replay"
        )
    return video, Evaluation(tuple(results.rewards), 0)


def _existing_replay(summary: ExperimentSummary) -> str | None:
    """The experiment's replay.mp4, with a warning when it predates the checkpoints it would be shown with."""
    video = os.path.join(summary.folder, DEFAULT_VIDEO_NAME)
    if not os.path.isfile(video):
        return None
    newest = max(os.path.getmtime(c.path) for c in summary.checkpoints)
    if os.path.getmtime(video) < newest:
        log.warning(
            "%s is older than the latest checkpoint, so it may show an earlier policy: move it away to record a "
            "new one",
            video,
        )
    return video


def main(argv: list[str] | None = None) -> StatusCode:
    args = parse_args(argv)
    try:
        check_repo_id(args.hf_repository)
        import_hub()
        summary = read_experiment(args.experiment_dir)
        video, evaluation = _existing_replay(summary), None
        if args.no_video:
            video = None
        elif video is None:
            video, evaluation = record_replay(args, summary.env)
        extras = CardExtras(evaluation, video, args.train_script, args.enjoy_script)
        push_experiment(summary.folder, args.hf_repository, extras, private=args.private)
    except PUSH_ERRORS as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return ExperimentStatus.SUCCESS


if __name__ == "__main__":
    sys.exit(main())
