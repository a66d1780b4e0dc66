"""Report the task scores of ``utils.task_rewards`` beside any NetHack env's own reward."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from sf_examples.nethack.utils.task_rewards import Score, default_scores
from sf_examples.nethack.utils.wrappers.blstats_info import merge_extra_stats

_READ_KEYS = ("blstats", "glyphs", "message")


def _copy_keys(obs: dict[str, Any]) -> dict[str, np.ndarray]:
    return {key: np.array(obs[key]) for key in _READ_KEYS}


class TaskRewardsInfoWrapper(gym.Wrapper):
    """Keep every task score (eating, gold, scouting, stairs, Oracle, Sokoban) running over the episode and put
    the totals into ``info["episode_extra_stats"]`` when it ends. The reward is left as it is.

    Needs the ``blstats``, ``glyphs`` and ``message`` observation keys. It keeps its own copy of the previous
    step's arrays, since NLE writes every observation into the same buffers.
    """

    def __init__(self, env: gym.Env, scores: Sequence[Score] | None = None) -> None:
        super().__init__(env)
        missing = set(_READ_KEYS) - set(env.observation_space.spaces)
        if missing:
            raise ValueError(f"TaskRewardsInfoWrapper needs the observation keys {sorted(missing)} from NLE")
        self.scores = list(default_scores() if scores is None else scores)
        self._last_obs: dict[str, Any] | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        for score in self.scores:
            score.reset_score()
        self._last_obs = _copy_keys(obs)
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._last_obs is not None:
            for score in self.scores:
                score.update(self._last_obs, obs, int(action))
        self._last_obs = _copy_keys(obs)
        if terminated or truncated:
            merge_extra_stats(info, {score.name: score.score for score in self.scores})
        return obs, reward, terminated, truncated, info
