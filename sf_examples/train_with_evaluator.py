"""Example: evaluate during training on another variant of the training env.

    python -m sf_examples.train_with_evaluator --experiment=cartpole_long_pole_eval

The policy trains on CartPole-v1 (``cartpole_train``) and the evaluator plays ``cartpole_long_pole``: the same task
with other physics, a pole twice as long and twice as heavy. Both keep CartPole-v1's spaces and 500-step limit, so
the evaluated policy can act in either, and the evaluation says how well what was learnt on one pole carries over.
Every ``--eval_every_env_steps`` (50k here) the evaluator plays ``--eval_episodes`` episodes with the latest weights;
the results go to ``eval/avg_reward`` and ``eval/avg_episode_len`` in TensorBoard next to the training curves, to
``eval.csv`` in the experiment folder and to one log line each. Best checkpoints are chosen by the long-pole score
(``--save_best_metric=eval/avg_reward``).

Any flag still works on the command line, e.g. ``--eval_env=cartpole_train`` to evaluate on the training variant.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import gymnasium as gym

from sample_factory.envs.env_utils import register_env
from sample_factory.utils.typing import Config, StatusCode
from sf_examples.entry_points import parse_with_defaults, train_family
from sf_examples.gym.gym_utils import GYM_DEFAULTS, wrap_gym_env

TRAIN_ENV = "cartpole_train"
EVAL_ENV = "cartpole_long_pole"
POLE_SCALE = 2.0  # the evaluation variant's pole: this many times longer and heavier

EVALUATOR_DEFAULTS: dict[str, Any] = {
    **GYM_DEFAULTS,
    "env": TRAIN_ENV,
    "eval_env": EVAL_ENV,
    "eval_every_env_steps": 50_000,
    "eval_episodes": 10,
    "eval_num_envs": 5,
    "save_best_metric": "eval/avg_reward",
    "save_best_after": 50_000,
    "num_workers": 2,
    "num_envs_per_worker": 8,
    "train_for_env_steps": 300_000,
}
# parse_evaluator_args(argv=None, evaluation=False) -> cfg: Sample Factory's flags over EVALUATOR_DEFAULTS; --eval_*
# flags given on the command line still win
parse_evaluator_args = partial(parse_with_defaults, EVALUATOR_DEFAULTS)


def make_cartpole(_full_env_name: str, cfg: Config | None = None, _env_config=None, render_mode=None) -> gym.Env:
    env = gym.make("CartPole-v1", render_mode=render_mode)
    return env if cfg is None else wrap_gym_env(env, cfg)


def make_long_pole_cartpole(_full_env_name: str, cfg: Config | None = None, _env_config=None, render_mode=None):
    """CartPole-v1 with a pole ``POLE_SCALE`` times longer and heavier (the physics reads these attributes)."""
    env = gym.make("CartPole-v1", render_mode=render_mode)
    physics = env.unwrapped
    physics.length *= POLE_SCALE  # half the pole's length, in the env's own terms
    physics.masspole *= POLE_SCALE
    physics.total_mass = physics.masspole + physics.masscart
    physics.polemass_length = physics.masspole * physics.length
    return env if cfg is None else wrap_gym_env(env, cfg)


def register_cartpole_variants() -> None:
    register_env(TRAIN_ENV, make_cartpole)
    register_env(EVAL_ENV, make_long_pole_cartpole)


def main() -> StatusCode:
    return train_family(register_cartpole_variants, parse_evaluator_args)


if __name__ == "__main__":
    sys.exit(main())
