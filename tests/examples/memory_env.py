"""A memory task no feed-forward policy can solve: recall, at the last step, a cue shown only at the first.

Each episode lasts ``EPISODE_LENGTH`` steps. The observation is ``[cue, t / (EPISODE_LENGTH - 1)]``; ``cue`` is +1 or
-1 (drawn per episode) at step 0 and 0 afterwards. Only the action of the last step counts: reward +1 if it names
the cue (action 1 for +1, action 0 for -1), -1 otherwise. A policy without memory sees the same observation at the
last step whatever the cue was, so its expected episode reward is 0 at best; one that remembers the cue gets 1.

Run as a script, it trains on the task (for ``tests/examples/test_learning.py``).
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ENV_NAME = "memory_cue"
EPISODE_LENGTH = 4


class MemoryCueEnv(gym.Env):
    observation_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.rng = np.random.default_rng()
        self.cue = 1.0
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.cue if self.t == 0 else 0.0, self.t / (EPISODE_LENGTH - 1)], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.cue = float(self.rng.choice([-1.0, 1.0]))
        self.t = 0
        return self._obs(), {}

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        if self.t < EPISODE_LENGTH:
            return self._obs(), 0.0, False, False, {}
        named = 1.0 if int(action) == 1 else -1.0
        return self._obs(), 1.0 if named == self.cue else -1.0, True, False, {}


def make_memory_env(full_env_name: str, cfg=None, env_config=None, render_mode=None) -> MemoryCueEnv:
    return MemoryCueEnv()


def main() -> int:
    from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import run_rl

    register_env(ENV_NAME, make_memory_env)
    parser, _ = parse_sf_args()
    # small nets, 2-episode rollouts, BPTT over the whole rollout; everything else is the library's defaults
    parser.set_defaults(
        env=ENV_NAME,
        encoder_mlp_layers=[32],
        rnn_size=32,
        rollout=2 * EPISODE_LENGTH,
        recurrence=2 * EPISODE_LENGTH,
        batch_size=512,
        learning_rate=1e-3,
        device="cpu",
    )
    return run_rl(parse_full_cfg(parser))


if __name__ == "__main__":
    sys.exit(main())
