"""A small scriptable Gymnasium env for wrapper tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ScriptedEnv(gym.Env):
    """Obs are filled with the step index (or come from ``obs_fn(t)``); rewards, ends and lives follow scripts.

    ``get_action_meanings`` exists only when ``action_meanings`` is given, like ALE envs vs. other envs.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        obs_shape: tuple[int, ...] = (4, 6, 3),
        rewards: list[float] | None = None,
        terminate_at: int | None = None,
        lives: list[int] | None = None,
        action_meanings: list[str] | None = None,
        obs_fn: Callable[[int], np.ndarray] | None = None,
    ) -> None:
        self.observation_space = spaces.Box(0, 255, shape=obs_shape, dtype=np.uint8)
        self.action_space = spaces.Discrete(len(action_meanings) if action_meanings else 4)
        self.rewards = rewards or [1.0] * 1000
        self.terminate_at = terminate_at
        self.lives = lives
        if action_meanings is not None:
            self.get_action_meanings = lambda: list(action_meanings)
        self.obs_fn = obs_fn
        self.t = 0
        self.resets = 0
        self.actions: list[Any] = []

    def _obs(self) -> np.ndarray:
        if self.obs_fn is not None:
            return self.obs_fn(self.t)
        return np.full(self.observation_space.shape, self.t % 256, dtype=np.uint8)

    def _info(self) -> dict[str, Any]:
        return {"lives": self.lives[self.t]} if self.lives else {}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        self.resets += 1
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.actions.append(action)
        reward = self.rewards[self.t]
        self.t += 1
        terminated = self.terminate_at is not None and self.t >= self.terminate_at
        return self._obs(), reward, terminated, False, self._info()
