"""IMPALA's asymmetric reward clipping for DeepMind Lab."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym

# IMPALA (Espeholt et al., 2018) squashes rewards with tanh and weights the positive part 5 times, the negative part
# 0.3 times: the many small penalties of DMLab levels then cannot drown out the rare rewards of reaching a goal.
POSITIVE_WEIGHT = 5.0
NEGATIVE_WEIGHT = 0.3


def clip_reward(reward: float) -> float:
    """``0.3 * min(tanh(r), 0) + 5 * max(tanh(r), 0)``."""
    squashed = math.tanh(reward)
    return NEGATIVE_WEIGHT * min(squashed, 0.0) + POSITIVE_WEIGHT * max(squashed, 0.0)


class DmlabRewardShapingWrapper(gym.Wrapper):
    """Gives the learner clipped rewards; the raw reward of each step stays in ``info["raw_reward"]`` and the level's
    raw score in the env's own episode statistics."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = {**info, "raw_reward": float(reward)}
        return obs, clip_reward(float(reward)), terminated, truncated, info
