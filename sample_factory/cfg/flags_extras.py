"""Flags of the optional parts: Weights & Biases, population-based training, evaluation during training, and the
enjoy/eval scripts."""

from __future__ import annotations

import argparse
import functools
from typing import Any

from sample_factory.utils.typing import Config
from sample_factory.utils.utils import str2bool

ArgParser = argparse.ArgumentParser


def add_wandb_args(p: ArgParser) -> None:
    """Weights & Biases logging (needs the optional wandb package)."""
    g = p.add_argument_group("Weights & Biases", "Optional experiment tracking; requires the wandb package.")
    g.add_argument("--with_wandb", type=str2bool, default=False, help="Log summaries to Weights & Biases.")
    g.add_argument("--wandb_user", type=str, default=None, help="W&B entity (user or team).")
    g.add_argument("--wandb_project", type=str, default="sample_factory", help="W&B project.")
    g.add_argument("--wandb_group", type=str, default=None, help="W&B group; defaults to the env name when None.")
    g.add_argument("--wandb_job_type", type=str, default="SF", help="W&B job type.")
    g.add_argument("--wandb_tags", type=str, default=[], nargs="*", help="W&B tags of the run.")


def add_pbt_args(p: ArgParser) -> None:
    """Population-based training over --num_policies policies."""
    g = p.add_argument_group("Population-based training", "Mutate and replace hyper-parameters across policies.")
    g.add_argument("--with_pbt", type=str2bool, default=False, help="Enable PBT (needs --num_policies > 1).")
    g.add_argument(
        "--pbt_mix_policies_in_one_env",
        type=str2bool,
        default=True,
        help="Multi-agent envs: let different policies control agents of the same env.",
    )
    g.add_argument("--pbt_period_env_steps", type=int, default=int(5e6), help="Env steps between PBT rounds.")
    g.add_argument("--pbt_start_mutation", type=int, default=int(2e7), help="Env steps before the first mutation.")
    g.add_argument(
        "--pbt_replace_fraction", type=float, default=0.3, help="Fraction of worst policies replaced by the best."
    )
    g.add_argument(
        "--pbt_mutation_rate", type=float, default=0.15, help="Probability of mutating each hyper-parameter."
    )
    g.add_argument(
        "--pbt_replace_reward_gap",
        type=float,
        default=0.1,
        help="Replace a policy only if the best beats it by this relative margin.",
    )
    g.add_argument(
        "--pbt_replace_reward_gap_absolute",
        type=float,
        default=1e-6,
        help="Replace a policy only if the best beats it by at least this absolute margin.",
    )
    g.add_argument("--pbt_optimize_gamma", type=str2bool, default=False, help="Also mutate the discount --gamma.")
    g.add_argument(
        "--pbt_target_objective",
        type=str,
        default="true_objective",
        help="Info key PBT maximises; falls back to the episode reward when the env does not report it.",
    )
    g.add_argument("--pbt_perturb_min", type=float, default=1.1, help="Smallest multiplicative mutation factor.")
    g.add_argument("--pbt_perturb_max", type=float, default=1.5, help="Largest multiplicative mutation factor.")


def add_evaluator_args(p: ArgParser) -> None:
    """Evaluation during training (an evaluator process beside the rollout workers), and how every evaluation acts."""
    g = p.add_argument_group(
        "Evaluation during training", "Episodes played with the latest weights while training (docs/evaluation.md)."
    )
    g.add_argument(
        "--eval_every_env_steps",
        type=int,
        default=0,
        help="Evaluate each policy every this many env steps (its eval/* summaries and eval.csv); 0 turns the "
        "evaluator off.",
    )
    g.add_argument(
        "--eval_env",
        type=str,
        default=None,
        help="Env the evaluator plays (same observation and action spaces as --env, e.g. a harder variant); None = "
        "--env.",
    )
    g.add_argument("--eval_episodes", type=int, default=10, help="Episodes per evaluation, counted as they start.")
    g.add_argument(
        "--eval_num_envs",
        type=int,
        default=10,
        help="Envs the evaluator steps side by side, one batched forward pass for all (never more than the episodes "
        "need): a round of one wave of episodes costs the least CPU time, fewer envs save memory.",
    )
    g.add_argument(
        "--eval_deterministic",
        type=str2bool,
        default=False,
        help="Take the most likely action instead of sampling: in the evaluator during training, and in the enjoy "
        "and eval scripts (which take the experiment's value unless it is typed again).",
    )


def add_eval_args(p: ArgParser) -> None:
    """Flags of the enjoy/eval scripts only (``parse_sf_args(evaluation=True)``)."""
    g = p.add_argument_group("Evaluation", "Only for enjoy/eval scripts: rendering, videos, episode limits, hub.")
    g.add_argument("--fps", type=int, default=0, help="Limit rendering to this many frames per second; 0 = no limit.")
    g.add_argument(
        "--eval_env_frameskip",
        type=int,
        default=None,
        help="Frameskip while evaluating; None uses --env_frameskip. Use 1 to watch every frame.",
    )
    g.add_argument("--no_render", action="store_true", help="Enjoy: do not render (faster evaluation).")
    g.add_argument(
        "--save_video", action="store_true", help="Enjoy: record a video of the episodes instead of rendering."
    )
    g.add_argument("--video_frames", type=int, default=1e9, help="Enjoy: stop recording after this many frames.")
    g.add_argument(
        "--video_name",
        type=str,
        default=None,
        help="Enjoy: video file name inside the experiment folder (sub-folders are created); None = replay.mp4.",
    )
    g.add_argument("--max_num_frames", type=int, default=1e9, help="Stop evaluating after this many frames.")
    g.add_argument("--max_num_episodes", type=int, default=1e9, help="Stop evaluating after this many episodes.")
    g.add_argument(
        "--push_to_hub",
        action="store_true",
        help="Enjoy: upload the experiment (model card, config.json, latest checkpoints, the recorded replay) to the "
        "Hugging Face Hub repository --hf_repository after recording; see docs/huggingface.md.",
    )
    g.add_argument(
        "--hf_repository",
        type=str,
        default=None,
        help="Hub repository (user/name) for --push_to_hub; ignored (with a warning) without it.",
    )
    g.add_argument("--policy_index", type=int, default=0, help="Which policy to evaluate when several were trained.")
    g.add_argument(
        "--train_script",
        type=str,
        default=None,
        help="Training module named in the hints enjoy/eval print when an experiment has no checkpoint and in a Hub "
        "model card; None = sf_examples.train_gym_env.",
    )
    g.add_argument(
        "--enjoy_script",
        type=str,
        default=None,
        help="Enjoy module named in hints: sample_factory.eval's warning about enjoy-only flags and the 'watch it' "
        "line of sf_examples.train_gym_env (a training script sets it with parser.set_defaults); also in a Hub "
        "model card. None = sf_examples.enjoy_gym_env.",
    )


@functools.cache
def _evaluation_defaults() -> dict:
    parser = argparse.ArgumentParser(add_help=False)
    add_eval_args(parser)
    return vars(parser.parse_args([]))


def evaluation_flag(cfg: Config, name: str) -> Any:
    """The value of an enjoy/eval flag (``add_eval_args``) in any config: a training config has none of them, so
    there it is the flag's declared default (code shared by training and evaluation reads them this way)."""
    values = cfg if isinstance(cfg, dict) else vars(cfg)
    if name in values:
        return values[name]
    return _evaluation_defaults()[name]
