"""Cut episodes in which the game clock stops: an agent stuck in a menu or a prompt learns nothing there."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_examples.nethack.utils import blstats as bl


class NoProgressTimeout(gym.Wrapper):
    """Truncate the episode after ``no_progress_timeout`` consecutive steps without the in-game turn counter
    advancing (menus, ``--More--`` prompts and typing into prompts take no game time). ``0`` turns it off."""

    def __init__(self, env: gym.Env, no_progress_timeout: int) -> None:
        super().__init__(env)
        if no_progress_timeout < 0:
            raise ValueError(f"no_progress_timeout must be >= 0 (0 turns it off), got {no_progress_timeout}")
        self.no_progress_timeout = no_progress_timeout
        self._turn = -1
        self._stalled_steps = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self._turn, self._stalled_steps = int(obs["blstats"][bl.TIME]), 0
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        turn = int(obs["blstats"][bl.TIME])
        if turn == self._turn:
            self._stalled_steps += 1
        else:
            self._turn, self._stalled_steps = turn, 0
        if self.no_progress_timeout and self._stalled_steps >= self.no_progress_timeout and not terminated:
            truncated = True
        return obs, reward, terminated, truncated, info
