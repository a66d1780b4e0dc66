"""A value that changes piecewise linearly with progress (steps, updates): annealed rates, curriculum knobs."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

__all__ = ["LinearDecay"]


class LinearDecay:
    """Piecewise-linear schedule through ``milestones``, a list of ``(x, value)`` points with increasing ``x``.

    ``at(x)`` interpolates between the two milestones around ``x`` and holds the first value before the first
    milestone and the last value after the last one: ``LinearDecay([(0, 3e-4), (10_000, 0.0)]).at(2_500)`` is
    ``2.25e-4``. Values may rise as well as fall. ``staircase`` rounds the result down to a multiple of itself, for
    schedules of counts (``staircase=1`` gives whole numbers).
    """

    def __init__(self, milestones: Sequence[tuple[float, float]], staircase: float | None = None) -> None:
        if len(milestones) == 0:
            raise ValueError("LinearDecay needs at least one (x, value) milestone, e.g. [(0, 1.0), (1e6, 0.0)]")
        xs = [float(x) for x, _ in milestones]
        if any(b <= a for a, b in zip(xs, xs[1:], strict=False)):
            raise ValueError(f"LinearDecay milestones must have strictly increasing x, got {xs}")
        if staircase is not None and staircase <= 0:
            raise ValueError(f"LinearDecay(staircase={staircase}): the step must be positive, or None for no steps")
        self.milestones = [(x, float(value)) for x, (_, value) in zip(xs, milestones, strict=True)]
        self.staircase = staircase
        self._xs = xs

    def at(self, x: float) -> float:
        """The schedule's value at progress ``x``."""
        i = bisect.bisect_right(self._xs, x)  # milestones[i - 1].x <= x < milestones[i].x
        if i == 0:
            value = self.milestones[0][1]
        elif i == len(self.milestones):
            value = self.milestones[-1][1]
        else:
            (x0, v0), (x1, v1) = self.milestones[i - 1], self.milestones[i]
            value = v0 + (v1 - v0) * (x - x0) / (x1 - x0)
        if self.staircase is not None:
            value = math.floor(value / self.staircase + 1e-9) * self.staircase  # 1e-9: 2.9999999 is step 3
        return value

    def __call__(self, x: float) -> float:
        return self.at(x)
