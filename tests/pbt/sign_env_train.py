"""Train a population on a task where the learning rate clearly matters (used by test_pbt_runs.py).

``sign_env``: the observation is +1 or -1, the right action is its sign (action 1 for +1); an episode is
``EPISODE_LEN`` steps and ``true_objective`` counts the right actions (a random policy gets half, a trained one all).
The reward of a right action is the env's reward-shaping term ``right`` (1 by default), which PBT may mutate
without changing the objective.
"""

import sys

import gymnasium as gym
import numpy as np

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import RewardShapingInterface, register_env
from sample_factory.train import run_rl

EPISODE_LEN = 16


class SignEnv(gym.Env, RewardShapingInterface):
    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.shaping = {"right": 1.0}
        self.rng = np.random.default_rng()
        self.t = self.right = 0
        self.obs = np.ones(1, dtype=np.float32)

    def get_default_reward_shaping(self):
        return {"right": 1.0}

    def set_reward_shaping(self, reward_shaping, agent_idx):
        self.shaping = dict(reward_shaping)

    def _next_obs(self):
        self.obs = np.array([1.0 if self.rng.random() < 0.5 else -1.0], dtype=np.float32)
        return self.obs

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = self.right = 0
        return self._next_obs(), {}

    def step(self, action):
        correct = int(action) == int(self.obs[0] > 0)
        self.right += correct
        self.t += 1
        done = self.t >= EPISODE_LEN
        info = {"true_objective": float(self.right)} if done else {}
        return self._next_obs(), float(correct) * self.shaping["right"], done, False, info


def make_sign_env(full_env_name, _cfg=None, _env_config=None, render_mode=None):
    return SignEnv()


def main() -> int:
    register_env("sign_env", make_sign_env)
    parser, _ = parse_sf_args()
    parser.set_defaults(use_rnn=False, encoder_mlp_layers=[16], normalize_input=False)
    return run_rl(parse_full_cfg(parser))


if __name__ == "__main__":
    sys.exit(main())
