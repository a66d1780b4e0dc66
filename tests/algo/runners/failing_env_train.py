"""Training script whose env raises after a few steps (used by test_failures.py)."""

import sys

import gymnasium as gym

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl


class ExplodingEnv(gym.Wrapper):
    def __init__(self, env, fail_after: int):
        super().__init__(env)
        self.steps = 0
        self.fail_after = fail_after

    def step(self, action):
        self.steps += 1
        if self.steps > self.fail_after:
            raise RuntimeError("the simulator exploded on purpose")
        return self.env.step(action)


def make_exploding_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    fail_after = 200 if env_config is not None and env_config.worker_index == 1 else 10**9
    return ExplodingEnv(gym.make("CartPole-v1"), fail_after)


class HangingResetEnv(gym.Wrapper):
    """Its first reset never finishes in time (a simulator that hangs while starting)."""

    def reset(self, **kwargs):
        import time

        time.sleep(600)
        return self.env.reset(**kwargs)


def make_hanging_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    env = gym.make("CartPole-v1")
    return HangingResetEnv(env) if env_config is not None and env_config.worker_index == 1 else env


def main() -> int:
    register_env("exploding_cartpole", make_exploding_env)
    register_env("hanging_cartpole", make_hanging_env)
    parser, _ = parse_sf_args()
    parser.set_defaults(use_rnn=False, encoder_mlp_layers=[32])
    return run_rl(parse_full_cfg(parser))


if __name__ == "__main__":
    sys.exit(main())
