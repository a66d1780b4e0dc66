"""Evaluate a NetHack policy on many envs at once, one batched forward pass per step; writes ``eval_results.csv``
(reward, length and every ``episode_extra_stats`` key: in-game score, depth, task scores, ...).

    python -m sf_examples.nethack.fast_eval_nethack --env=nethack_challenge --experiment=nethack_monk \
        --sample_env_episodes=128 --num_workers=16 --num_envs_per_worker=2

``--sample_env_episodes`` (Sample Factory 2's name) is the number of episodes, the same as ``--max_num_episodes``;
``--num_workers * --num_envs_per_worker`` envs run side by side in this process.
"""

from __future__ import annotations

import argparse
import sys

from sample_factory.eval import do_eval
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode
from sf_examples.nethack.train_nethack import can_run, parse_nethack_args, register_nethack_components


def pop_sample_env_episodes(argv: list[str]) -> tuple[list[str], int | None]:
    """Take ``--sample_env_episodes=N`` (or ``--sample_env_episodes N``) out of ``argv``; N or None."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--sample_env_episodes", type=int, default=None)
    known, rest = parser.parse_known_args(argv)
    if known.sample_env_episodes is not None and known.sample_env_episodes < 1:
        raise SystemExit(f"--sample_env_episodes must be >= 1, got {known.sample_env_episodes}")
    return rest, known.sample_env_episodes


def main(argv: list[str] | None = None) -> StatusCode:
    argv, episodes = pop_sample_env_episodes(sys.argv[1:] if argv is None else list(argv))
    if episodes is not None:
        argv.append(f"--max_num_episodes={episodes}")
    register_nethack_components()
    cfg = parse_nethack_args(argv, evaluation=True)
    if not can_run(cfg):
        return ExperimentStatus.FAILURE
    return do_eval(cfg)


if __name__ == "__main__":
    sys.exit(main())
