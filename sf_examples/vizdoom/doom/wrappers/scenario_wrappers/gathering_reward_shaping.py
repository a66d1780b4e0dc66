"""Health gathering: reward the medkits picked up, not only the time survived."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_examples.vizdoom.doom.game_setup import vizdoom

HEALTH_PICKUP_REWARD = 0.01  # per health point gained; a medkit gives 25


class DoomGatheringRewardShaping(gym.Wrapper):
    """Adds ``HEALTH_PICKUP_REWARD`` per health point gained (the scenario's acid floor only ever takes health away,
    so every gain is a pickup) and reports ``health_picked_up`` at episode end."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.health = 0.0
        self.picked_up = 0.0

    def _health(self) -> float:
        game = self.env.unwrapped.game
        return 0.0 if game is None else float(game.get_game_variable(vizdoom().GameVariable.HEALTH))

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self.health, self.picked_up = self._health(), 0.0
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        health = self._health()
        gained = max(health - self.health, 0.0) if not terminated else 0.0
        self.health = health
        self.picked_up += gained
        if terminated or truncated:
            extra = {**info.get("episode_extra_stats", {}), "health_picked_up": self.picked_up}
            info = {**info, "episode_extra_stats": extra}
        return obs, reward + HEALTH_PICKUP_REWARD * gained, terminated, truncated, info
