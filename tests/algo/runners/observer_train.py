"""A Sample Factory 2-style user script: custom env factory with renamed parameters, make_runner, an observer.

Used by test_observers.py. Everything the hooks see is written to ``observer_log.json`` in the experiment folder.
"""

import json
import os
import subprocess
import sys

import gymnasium as gym

from sample_factory.algo.runners.runner import AlgoObserver, Runner
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import make_runner
from sample_factory.utils.utils import experiment_dir

SEEN_CONFIGS = []


def make_env(full_env_name, _cfg=None, _env_config=None, render_mode=None):
    # the names differ from create_env's on purpose: the library must call this positionally
    assert full_env_name == "renamed_cartpole"
    return gym.make("CartPole-v1", render_mode=render_mode)


class RecordingObserver(AlgoObserver):
    def __init__(self) -> None:
        self.events: list = []
        self.episodes = 0
        self.ps_output = ""

    def on_init(self, runner: Runner) -> None:
        self.events.append(["on_init", runner.env_info is None])

    def on_connect_components(self, runner: Runner) -> None:
        self.events.append(["on_connect_components", runner.env_info.num_agents])

    def on_start(self, runner: Runner) -> None:
        self.events.append(["on_start"])

    def on_training_step(self, runner: Runner, training_iteration_since_resume: int) -> None:
        self.events.append(["on_training_step", training_iteration_since_resume])
        if training_iteration_since_resume == 3 and not runner.cfg.serial_mode:
            self.ps_output = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout

    def extra_summaries(self, runner: Runner, policy_id, env_steps: int, writer) -> None:
        self.events.append(["extra_summaries", policy_id, env_steps])
        writer.add_scalar("custom/episodes_seen_by_handler", self.episodes, env_steps)

    def on_stop(self, runner: Runner) -> None:
        self.events.append(["on_stop", sum(runner.env_steps.values())])
        log = {"events": self.events, "episodes": self.episodes, "ps": self.ps_output}
        with open(os.path.join(experiment_dir(runner.cfg), "observer_log.json"), "w") as f:
            json.dump(log, f)


def main() -> int:
    register_env("renamed_cartpole", make_env)
    parser, _ = parse_sf_args()
    parser.set_defaults(use_rnn=False, encoder_mlp_layers=[64, 64])
    cfg = parse_full_cfg(parser)
    observer = RecordingObserver()

    def count_episode(runner, msg, policy_id):
        assert msg["policy_id"] == policy_id == 0
        assert set(msg["episodic"]) >= {"reward", "len", "true_objective", "episode_extra_stats"}
        observer.episodes += 1

    return run_with(cfg, [observer], [count_episode])


def run_with(cfg, observers: list[AlgoObserver], handlers=()) -> int:
    """What a Sample Factory 2 script does to watch its run: make_runner, register, init, run."""
    cfg, runner = make_runner(cfg)
    for observer in observers:
        runner.register_observer(observer)
    for handler in handlers:
        runner.register_episodic_stats_handler(handler)
    status = runner.init()
    return runner.run() if status == 0 else status


if __name__ == "__main__":
    sys.exit(main())
