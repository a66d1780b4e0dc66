"""Example: an env where the second sub-action must depend on the first, so the autoregressive head wins.

    python -m sf_examples.train_autoregressive_env --action_head=autoregressive --experiment=echo_ar
    python -m sf_examples.train_autoregressive_env --action_head=factorized --experiment=echo_factorized

The env (``echo_choice``): an action is a pair ``(a1, a2)`` of ``MultiDiscrete([n, n])`` (``n = 4``); the observation is
a constant, so it tells the policy nothing, and the policy has no memory (``--use_rnn=False``). A step earns 1 when
``a2 == a1`` *and* ``a1`` differs from the previous step's ``a1``; the first step of an episode earns nothing (it only
sets the previous choice). An episode has ``EPISODE_LEN = 16`` steps, so 15 of them can earn a reward.

Why a factorized head cannot exceed 1/4 per step. A factorized memoryless policy draws ``a1 ~ p`` and ``a2 ~ q``
independently, the same way at every step, so the previous ``a1`` is an independent draw from ``p`` too. The chance of
a reward is ``sum_i p_i q_i (1 - p_i) <= max_i p_i (1 - p_i) * sum_i q_i <= 1/4`` (``p_i (1 - p_i) <= 1/4``). Its
expected return is therefore at most ``15 / 4 = 3.75`` per episode (reached by ``p = (1/2, 1/2, 0, 0)``, ``q``
on the first choice). The autoregressive head can echo: ``a1 ~ m``, ``a2 = a1``, which earns ``sum_i m_i (1 - m_i) =
1 - sum_i m_i^2``, i.e. ``3/4`` per step with a uniform ``m`` over the 4 choices: ``15 * 3/4 = 11.25`` per episode.
The bound holds for fixed weights, which is what the evaluator measures (``eval/avg_reward`` with sampled actions:
``--eval_deterministic=True`` would always repeat the same choice and earn nothing, whichever the head).

The episode also reports ``agree`` (the share of steps with ``a2 == a1``) and ``new_choice`` (with ``a1`` not the
previous one) in ``info["episode_extra_stats"]``.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import register_env
from sample_factory.utils.typing import Config, StatusCode
from sf_examples.entry_points import parse_with_defaults, train_family

ENV_NAME = "echo_choice"
NUM_CHOICES = 4
EPISODE_LEN = 16
# the most a factorized memoryless policy can expect per episode: 1/4 on each of the EPISODE_LEN - 1 rewarded steps
FACTORIZED_CEILING = (EPISODE_LEN - 1) / 4
# what echoing a uniformly drawn first choice earns: 1 - 1/NUM_CHOICES on each rewarded step
AUTOREGRESSIVE_OPTIMUM = (EPISODE_LEN - 1) * (1 - 1 / NUM_CHOICES)

ECHO_DEFAULTS: dict[str, Any] = {
    "env": ENV_NAME,
    "action_head": "autoregressive",
    "use_rnn": False,  # a memory would let any policy cycle through the choices: the bound is for memoryless ones
    "normalize_input": False,  # the observation is a constant
    "encoder_mlp_layers": [32],
    "num_workers": 2,
    "num_envs_per_worker": 8,
    "rollout": 16,
    "batch_size": 512,
    "learning_rate": 1e-3,
    "exploration_loss_coeff": 0.01,
    "train_for_env_steps": 300_000,
    "eval_every_env_steps": 50_000,
    "eval_episodes": 40,
}
# parse_echo_args(argv=None, evaluation=False) -> cfg: Sample Factory's flags over ECHO_DEFAULTS (no flags of its own)
parse_echo_args = partial(parse_with_defaults, ECHO_DEFAULTS)


class EchoChoiceEnv(gym.Env):
    """Choose a pair; rewarded when both halves agree on a choice other than the previous one (see the module)."""

    def __init__(self, num_choices: int = NUM_CHOICES, episode_len: int = EPISODE_LEN) -> None:
        self.num_choices = num_choices
        self.episode_len = episode_len
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.MultiDiscrete([num_choices, num_choices])
        self.previous: int | None = None
        self.steps = self.agreements = self.new_choices = 0

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.previous = None
        self.steps = self.agreements = self.new_choices = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, dict]:
        first, second = (int(a) for a in np.asarray(action).reshape(-1))
        new_choice = self.previous is not None and first != self.previous
        reward = float(new_choice and second == first)
        self.agreements += int(second == first)
        self.new_choices += int(new_choice)
        self.previous = first
        self.steps += 1
        truncated = self.steps >= self.episode_len
        info: dict = {}
        if truncated:
            info["episode_extra_stats"] = {
                "agree": self.agreements / self.steps,
                "new_choice": self.new_choices / (self.steps - 1),
            }
        return np.zeros(1, dtype=np.float32), reward, False, truncated, info


def make_echo_env(_full_env_name: str, _cfg: Config = None, _env_config=None, _render_mode=None) -> gym.Env:
    return EchoChoiceEnv()


def register_echo_env() -> None:
    register_env(ENV_NAME, make_echo_env)


def main() -> StatusCode:
    return train_family(register_echo_env, parse_echo_args)


if __name__ == "__main__":
    sys.exit(main())
