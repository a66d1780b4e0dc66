"""A small bonus for entering parts of the map not visited yet in the episode."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_examples.vizdoom.doom.game_setup import vizdoom

CELL_SIZE = 64.0  # map units (a corridor is 64-128 wide): one cell is about a step of a few frames
NEW_CELL_BONUS = 0.005


class ExplorationWrapper(gym.Wrapper):
    """Adds ``NEW_CELL_BONUS`` to the reward for each first visit of a ``CELL_SIZE`` square of the map, and reports
    the number of squares visited (``visited_cells``) at episode end: a push out of dead ends on maze maps."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.visited: set[tuple[int, int]] = set()

    def _cell(self) -> tuple[int, int] | None:
        game = self.env.unwrapped.game
        if game is None:
            return None
        gv = vizdoom().GameVariable
        x, y = game.get_game_variable(gv.POSITION_X), game.get_game_variable(gv.POSITION_Y)
        return int(x // CELL_SIZE), int(y // CELL_SIZE)

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        cell = self._cell()
        self.visited = {cell} if cell is not None else set()
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        cell = self._cell()
        if cell is not None and cell not in self.visited:
            self.visited.add(cell)
            reward += NEW_CELL_BONUS
        if terminated or truncated:
            extra = {**info.get("episode_extra_stats", {}), "visited_cells": float(len(self.visited))}
            info = {**info, "episode_extra_stats": extra}
        return obs, reward, terminated, truncated, info
