"""End-of-episode character statistics from NLE's bottom line."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from sf_examples.nethack.utils import blstats as bl

# episode_extra_stats key -> blstats position; reported as policy_stats/avg_<key>
REPORTED = {
    "score": bl.SCORE,
    "turns": bl.TIME,
    "dlvl": bl.DEPTH,
    "max_hitpoints": bl.MAX_HITPOINTS,
    "max_energy": bl.MAX_ENERGY,
    "armor_class": bl.ARMOR_CLASS,
    "experience_level": bl.EXPERIENCE_LEVEL,
    "experience_points": bl.EXPERIENCE_POINTS,
}


def merge_extra_stats(info: dict[str, Any], stats: dict[str, float]) -> None:
    """Add ``stats`` to ``info["episode_extra_stats"]``, keeping what other wrappers put there."""
    info["episode_extra_stats"] = {**info.get("episode_extra_stats", {}), **stats}


class BlstatsInfoWrapper(gym.Wrapper):
    """When an episode ends, put the character's final in-game score, turn count, depth, max HP and energy, armour
    class and experience into ``info["episode_extra_stats"]``.

    NLE zeroes ``blstats`` once the game is over, so the values are those of the last observation of the game.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._last_blstats: np.ndarray | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self._last_blstats = np.array(obs["blstats"])
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if np.any(obs["blstats"]):
            self._last_blstats = np.array(obs["blstats"])
        if (terminated or truncated) and self._last_blstats is not None:
            merge_extra_stats(info, {key: float(self._last_blstats[i]) for key, i in REPORTED.items()})
        return obs, reward, terminated, truncated, info
