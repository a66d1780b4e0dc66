"""A discrete action space standing in for a bounded continuous control.

Some continuous controls (e.g. turning speed) learn faster as a categorical choice among evenly spaced values:
the policy samples an index like any ``Discrete`` action and the env maps it back with ``to_continuous``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class Discretized(gym.spaces.Discrete):
    """``Discrete(n)`` whose action ``i`` means ``min_action + i * (max_action - min_action) / (n - 1)``."""

    def __init__(self, n: int, min_action: float, max_action: float, seed: int | np.random.Generator | None = None):
        if n < 2:
            raise ValueError(f"Discretized needs n >= 2 values to span [{min_action}, {max_action}], got n={n}")
        super().__init__(n, seed=seed)
        self.min_action = float(min_action)
        self.max_action = float(max_action)

    @property
    def step_size(self) -> float:
        """Distance between two neighbouring continuous values."""
        return (self.max_action - self.min_action) / (self.n - 1)

    def to_continuous(self, action: int | np.ndarray) -> float | np.ndarray:
        """The continuous value of a discrete action (elementwise for arrays)."""
        continuous = self.min_action + np.asarray(action, dtype=np.float64) * self.step_size
        return float(continuous) if np.ndim(continuous) == 0 else continuous

    def __repr__(self) -> str:
        return f"Discretized({self.n}, min_action={self.min_action}, max_action={self.max_action})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, Discretized)
            and super().__eq__(other)
            and (self.min_action, self.max_action) == (other.min_action, other.max_action)
        )

    def __hash__(self) -> int:
        return hash((self.n, self.min_action, self.max_action))
