"""Serial CartPole training that records torch's thread count at every training step (for test_learner_threads.py).

The counts go to ``threads_log.json`` in the experiment folder.
"""

import json
import os
import sys

import gymnasium as gym
import torch
from observer_train import run_with

from sample_factory.algo.runners.runner import AlgoObserver, Runner
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.utils.utils import experiment_dir


class ThreadCounter(AlgoObserver):
    def __init__(self) -> None:
        self.counts: list[int] = []

    def on_training_step(self, runner: Runner, training_iteration_since_resume: int) -> None:
        self.counts.append(torch.get_num_threads())

    def on_stop(self, runner: Runner) -> None:
        with open(os.path.join(experiment_dir(runner.cfg), "threads_log.json"), "w") as f:
            json.dump(self.counts, f)


def main() -> int:
    register_env("threads_cartpole", lambda name, cfg=None, env_config=None, render_mode=None: gym.make("CartPole-v1"))
    parser, _ = parse_sf_args()
    parser.set_defaults(use_rnn=False, encoder_mlp_layers=[32], batch_size=256, rollout=32)
    return run_with(parse_full_cfg(parser), [ThreadCounter()])


if __name__ == "__main__":
    sys.exit(main())
