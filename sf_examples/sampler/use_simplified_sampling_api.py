"""Pull trajectories from the sampler in your own loop (SyncSamplingAPI) and measure its throughput.

    python -m sf_examples.sampler.use_simplified_sampling_api --env=CartPole-v1 --device=cpu \\
        --num_workers=2 --num_envs_per_worker=8 --sample_env_steps=200000

Rollout and inference workers run with a fixed policy (the experiment's latest checkpoint, or a fresh model); this
script takes every trajectory they finish, counts its samples and prints how many it got per second. Put your own
processing where the counting is (write a dataset, fill a replay buffer, train something else).

With --serial_mode=False (the default) the workers are processes started with ``spawn``: a script of your own must
create the sampler under ``if __name__ == "__main__":``, as here, or every worker re-runs the script.
"""

from __future__ import annotations

import sys
import time

from sample_factory.algo.sampling.sync_sampling_api import SyncSamplingAPI
from sample_factory.algo.utils.rl_utils import samples_per_trajectory
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode
from sf_examples.gym.gym_utils import add_gym_env_args, gym_override_defaults
from sf_examples.train_gym_env import register_env_from_cfg


def parse_args(argv: list[str] | None = None) -> Config:
    parser, partial_cfg = parse_sf_args(argv=argv)
    add_gym_env_args(partial_cfg.env, parser)
    gym_override_defaults(partial_cfg.env, parser)
    parser.add_argument(
        "--sample_env_steps", type=int, default=1_000_000, help="Stop after this many samples (agent env steps)."
    )
    return parse_full_cfg(parser, argv)


def collect(cfg: Config, env_info: EnvInfo | None = None, sample_env_steps: int | None = None) -> tuple[int, float]:
    """Take trajectories until ``sample_env_steps`` (default ``--sample_env_steps``) samples arrived; returns (samples,
    seconds since the first). ``env_info`` saves the sampler creating an env to learn the spaces."""
    target = cfg.sample_env_steps if sample_env_steps is None else sample_env_steps
    sampler = SyncSamplingAPI(cfg, env_info)
    sampler.start()
    samples, first_at = 0, None
    try:
        while samples < target:
            trajectory = sampler.get_trajectories_sync()
            if trajectory is None:  # the sampler stopped by itself (a failure, Ctrl+C, --train_for_seconds)
                break
            if first_at is None:  # measure sampling, not the start-up of the workers
                first_at = time.monotonic()
            else:
                samples += samples_per_trajectory(trajectory)
    finally:
        status = sampler.stop()
    if status not in (None, ExperimentStatus.SUCCESS):
        print(f"The sampler stopped with status {status}", file=sys.stderr)
    return samples, time.monotonic() - first_at if first_at is not None else 0.0


def generate_trajectories(cfg: Config, env_info: EnvInfo | None, sample_env_steps: int = 1_000_000) -> StatusCode:
    """Collect ``sample_env_steps`` samples and print the sampling throughput; FAILURE if fewer arrived.

    ``env_info`` may be None: the sampler then creates one env to learn the spaces.
    """
    samples, seconds = collect(cfg, env_info, sample_env_steps)
    if samples < sample_env_steps:
        print(f"Only {samples} of --sample_env_steps={sample_env_steps} samples arrived", file=sys.stderr)
        return ExperimentStatus.FAILURE
    print(f"Collected {samples} samples in {seconds:.2f} s: sampling throughput {samples / max(seconds, 1e-9):.1f} SPS")
    return ExperimentStatus.SUCCESS


def main() -> StatusCode:
    cfg = parse_args()
    register_env_from_cfg(cfg)
    return generate_trajectories(cfg, None, cfg.sample_env_steps)


if __name__ == "__main__":
    sys.exit(main())
