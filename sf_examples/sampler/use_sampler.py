"""Use the sampler alone: collect experience with a fixed policy and process each trajectory yourself.

    python -m sf_examples.sampler.use_sampler --env=CartPole-v1 --train_for_env_steps=20000 --device=cpu

Here the callback computes per-trajectory statistics and appends them to a CSV file in
the experiment folder; replace it with your own (write a dataset, evaluate, ...).
"""

from __future__ import annotations

import os
import sys

from sample_factory.algo.sampling.sampler import run_sampler
from sample_factory.utils.tensor_dict import TensorDict
from sf_examples.train_gym_env import parse_gym_args, register_env_from_cfg

OUTPUT_ENV_VAR = "SF_SAMPLER_EXAMPLE_CSV"


def summarize_trajectories(policy_id: int, trajectories: TensorDict) -> None:
    """Runs in the consumer's process: one CSV row per trajectory (policy, steps, reward sum, episode ends)."""
    path = os.environ[OUTPUT_ENV_VAR]
    rewards = trajectories["rewards"].sum(dim=1)
    dones = trajectories["dones"].sum(dim=1)
    valid = trajectories["valids"].sum(dim=1)
    with open(path, "a") as f:
        for i in range(len(rewards)):
            f.write(f"{policy_id},{int(valid[i])},{float(rewards[i]):.3f},{int(dones[i])}\n")


def main() -> int:
    cfg = parse_gym_args()
    register_env_from_cfg(cfg)
    folder = os.path.join(cfg.train_dir, cfg.experiment)
    os.makedirs(folder, exist_ok=True)
    # children inherit the environment, so the callback finds its output file in any process
    os.environ[OUTPUT_ENV_VAR] = os.path.join(folder, "trajectories.csv")
    status = run_sampler(cfg, summarize_trajectories)
    print(f"Trajectory statistics written to {os.environ[OUTPUT_ENV_VAR]}")
    return status


if __name__ == "__main__":
    sys.exit(main())
