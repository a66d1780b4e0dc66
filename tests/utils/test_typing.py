"""``sample_factory.utils.typing.Env`` is the base class of user envs and is Gymnasium's Env."""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from sample_factory.utils.typing import Env


class _UserEnv(Env):
    def __init__(self) -> None:
        self.observation_space = spaces.Box(-1, 1, (2,), np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.ones(2, np.float32), 1.0, True, False, {}


def test_user_env_is_a_gymnasium_env_that_wrappers_accept():
    env = _UserEnv()
    assert isinstance(env, gymnasium.Env)
    wrapped = gymnasium.wrappers.TimeLimit(env, max_episode_steps=3)
    obs, _ = wrapped.reset(seed=1)
    assert obs.shape == (2,) and wrapped.step(0)[1] == 1.0
