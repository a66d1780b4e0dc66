"""The previous action as an observation key, so a model can tell what its last keypress did."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

PREV_ACTIONS_KEY = "prev_actions"


class PrevActionsWrapper(gym.Wrapper):
    """Add ``obs["prev_actions"]``: a ``(1,)`` int64 array with the action of the previous step (0 after reset)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise TypeError(f"PrevActionsWrapper needs a Discrete action space, got {env.action_space}")
        num_actions = int(env.action_space.n)
        spaces = dict(env.observation_space.spaces)
        spaces[PREV_ACTIONS_KEY] = gym.spaces.Box(0, num_actions - 1, (1,), dtype=np.int64)
        self.observation_space = gym.spaces.Dict(spaces)

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        return {**obs, PREV_ACTIONS_KEY: np.zeros(1, dtype=np.int64)}, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return {**obs, PREV_ACTIONS_KEY: np.array([int(action)], dtype=np.int64)}, reward, terminated, truncated, info
