"""Train on CartPole wrapped so that it fails: steps and resets raise now and then, and one env hangs once.

python -m sf_examples.train_faulty_env --experiment=f --num_workers=2 --train_for_env_steps=60000 --device=cpu

Shows (and tests) the fault tolerance of docs/reliability.md: an env that raises is closed and recreated on its
worker (``--env_error_behavior=recreate``), and the rollout worker whose env hangs stops sending heartbeats, is
killed after ``--heartbeat_timeout`` seconds and restarted. The log counts both; training reaches its target.
"""

from __future__ import annotations

import os
import random
import sys
import time

import gymnasium as gym

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl
from sample_factory.utils.utils import experiment_dir, str2bool

ENV_NAME = "faulty_cartpole"
HUNG_MARKER = ".faulty_env_hung"  # in the experiment folder: the one hang of a run has happened


class FaultyEnv(gym.Wrapper):
    """Raises in ``step`` with probability ``step_error_prob``, in ``reset`` with ``reset_error_prob``; an env given
    a ``hang_marker`` sleeps ``hang_seconds`` at the ``hang_after``-th step of its process's such envs (recreated
    ones included) if the marker does not exist yet, and creates it."""

    hang_clock = 0  # steps of this process's envs that may hang, across recreations

    def __init__(self, env, rng: random.Random, cfg, hang_marker: str | None) -> None:
        super().__init__(env)
        self.rng = rng
        self.step_error_prob = cfg.fault_step_error_prob
        self.reset_error_prob = cfg.fault_reset_error_prob
        self.hang_after, self.hang_seconds = cfg.fault_hang_after, cfg.fault_hang_seconds
        self.hang_marker = hang_marker
        self.steps = 0

    def reset(self, **kwargs):
        if self.rng.random() < self.reset_error_prob:
            raise RuntimeError("faulty env: reset failed on purpose")
        return self.env.reset(**kwargs)

    def step(self, action):
        self.steps += 1
        if self.hang_marker is not None:
            FaultyEnv.hang_clock += 1
        if FaultyEnv.hang_clock == self.hang_after and self.hang_marker and not os.path.exists(self.hang_marker):
            open(self.hang_marker, "w").close()  # noqa: SIM115 - an empty marker file
            time.sleep(self.hang_seconds)  # a simulator that stops answering
        if self.rng.random() < self.step_error_prob:
            raise RuntimeError("faulty env: step failed on purpose")
        return self.env.step(action)


def make_faulty_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    env_id = env_config.env_id if env_config is not None else -1
    rng = random.Random(None if cfg.seed is None else cfg.seed * 7919 + env_id)
    # only the run's first env may hang: one stuck worker, the others go on
    hangs = cfg.fault_hang_after > 0 and env_config is not None and env_config.env_id == 0
    marker = os.path.join(experiment_dir(cfg), HUNG_MARKER) if hangs else None
    return FaultyEnv(gym.make("CartPole-v1", render_mode=render_mode), rng, cfg, marker)


def add_faulty_env_args(parser) -> None:
    g = parser.add_argument_group("Faulty env", "How often the example env fails (sf_examples/train_faulty_env.py).")
    g.add_argument("--fault_step_error_prob", type=float, default=0.002, help="Probability that a step raises.")
    g.add_argument("--fault_reset_error_prob", type=float, default=0.01, help="Probability that a reset raises.")
    g.add_argument(
        "--fault_hang_after",
        type=int,
        default=3000,
        help="The run's first env hangs in this step of its life, once per experiment; 0: never.",
    )
    g.add_argument("--fault_hang_seconds", type=float, default=3600.0, help="How long the hang lasts.")
    g.add_argument(
        "--fault_keep_marker",
        type=str2bool,
        default=False,
        help="Keep the hang marker of an earlier run of this experiment (a resumed run then does not hang again).",
    )


def parse_faulty_args(argv: list[str] | None = None):
    parser, _ = parse_sf_args(argv=argv)
    add_faulty_env_args(parser)
    # a hung env is noticed within 15 s; the model and batch fit CartPole
    parser.set_defaults(
        env=ENV_NAME, heartbeat_timeout=15, env_error_behavior="recreate", encoder_mlp_layers=[64, 64], use_rnn=False
    )
    return parse_full_cfg(parser, argv)


def main() -> int:
    cfg = parse_faulty_args()
    register_env(ENV_NAME, make_faulty_env)
    marker = os.path.join(experiment_dir(cfg, mkdir=False), HUNG_MARKER)
    if not cfg.fault_keep_marker and os.path.exists(marker):
        os.remove(marker)  # a new run of the experiment hangs once again
    return run_rl(cfg)


if __name__ == "__main__":
    sys.exit(main())
