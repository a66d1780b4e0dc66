"""A curriculum of bot skill: harder bots after matches the agent wins, easier after matches it loses."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_examples.vizdoom.doom.wrappers.multiplayer_stats import match_standings

DIFFICULTY_STEP = 10
MIN_DIFFICULTY, MAX_DIFFICULTY = 0, 100


class BotDifficultyWrapper(gym.Wrapper):
    """Bot skill (0-100, every skill stat of the bots) follows the agent: +10 after a match it wins, -10 after one
    it ends in the bottom half. A change restarts the game at the next reset, since bots read their skills when the
    game starts. ``bot_difficulty`` is reported at every episode end."""

    def __init__(self, env: gym.Env, initial_difficulty: int | None = None) -> None:
        super().__init__(env)
        core = env.unwrapped
        start = initial_difficulty if initial_difficulty is not None else core.options.bot_difficulty
        self.difficulty = int(50 if start is None else start)
        core.options.bot_difficulty = self.difficulty

    def next_difficulty(self, standings: dict[str, Any]) -> int:
        """The skill of the next match after one that ended with ``standings``."""
        if not standings:
            return self.difficulty
        if standings["FINAL_PLACE"] == 1 and not standings["TIED_FOR_FIRST"]:
            return min(self.difficulty + DIFFICULTY_STEP, MAX_DIFFICULTY)
        if standings["FINAL_PLACE"] > (standings["PLAYER_COUNT"] + 1) // 2:
            return max(self.difficulty - DIFFICULTY_STEP, MIN_DIFFICULTY)
        return self.difficulty

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            extra = {**info.get("episode_extra_stats", {}), "bot_difficulty": float(self.difficulty)}
            info = {**info, "episode_extra_stats": extra}
            new = self.next_difficulty(match_standings(self.env.unwrapped))
            if new != self.difficulty:
                self.difficulty = new
                core = self.env.unwrapped
                core.options.bot_difficulty = new
                core.close()  # the next reset starts a game whose bots have the new skills
        return obs, reward, terminated, truncated, info
