"""Reward shaping for deathmatch: shaped terms from game-variable changes, and the true objectives of a match."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import RewardShapingInterface
from sf_examples.vizdoom.doom.game_variables import AMMO_VARIABLES, WEAPON_VARIABLES
from sf_examples.vizdoom.doom.wrappers.multiplayer_stats import match_standings

# Default reward-shaping coefficients, applied to the change of each quantity per step. Frags are the objective;
# the small terms make the first frags findable: dealing damage, not taking it, and collecting what helps to fight.
DEFAULT_DEATHMATCH_SHAPING: dict[str, float] = {
    "frag": 1.0,
    "death": -0.75,
    "hit": 0.01,
    "damage_dealt": 0.003,
    "damage_taken": -0.003,
    "health_pickup": 0.005,
    "armor_pickup": 0.005,
    "weapon_pickup": 0.15,
    "ammo_pickup": 0.0005,
}
_SCORE_TERMS = {
    "frag": "FRAGCOUNT",
    "death": "DEATHCOUNT",
    "hit": "HITCOUNT",
    "damage_dealt": "DAMAGECOUNT",
    "damage_taken": "DAMAGE_TAKEN",
}


def true_objective_frags(info: dict[str, Any]) -> float:
    """The frags of the episode (the ``frag`` tally; ``FRAGCOUNT`` where only the game variable is given)."""
    return float(info["frag"] if "frag" in info else info["FRAGCOUNT"])


def true_objective_winning_the_game(info: dict[str, Any]) -> float:
    """1 for an episode the agent ended alone in first place by frags, else 0 (self-play's objective)."""
    return 1.0 if info.get("FINAL_PLACE") == 1 and not info.get("TIED_FOR_FIRST", False) else 0.0


class DoomRewardShapingWrapper(gym.Wrapper, RewardShapingInterface):
    """Adds shaped terms to the game reward; at episode end reports ``true_objective`` and the tallies.

    ``true_objective_func`` turns the episode's outcome (the info, the tallies of the shaped terms such as ``frag``,
    and the match standings ``FRAGCOUNT``/``FINAL_PLACE``) into the objective; the default counts frags.

    Coefficients are per env (one player), so population-based training can tune them per agent through
    ``set_reward_shaping``. Pickup terms count increases only, and none are counted on the step of a respawn
    (the new body's full health and pistol ammo are not pickups).
    """

    def __init__(
        self,
        env: gym.Env,
        reward_shaping_scheme: dict[str, float] | None = None,
        true_objective_func: Callable[[dict[str, Any]], float] | None = None,
    ) -> None:
        super().__init__(env)
        self.reward_shaping = dict(reward_shaping_scheme or DEFAULT_DEATHMATCH_SHAPING)
        self.true_objective_func = true_objective_func or true_objective_frags
        game_env = env.unwrapped
        self._columns = {term: game_env.variable_index[name] for term, name in _SCORE_TERMS.items()}
        self._weapon_columns = np.array([game_env.variable_index[name] for name in WEAPON_VARIABLES])
        self._ammo_columns = np.array([game_env.variable_index[name] for name in AMMO_VARIABLES])
        self._health = game_env.variable_index["HEALTH"]
        self._armor = game_env.variable_index["ARMOR"]
        self._previous = np.zeros_like(game_env.game_variables)
        self._tally: dict[str, float] = {}

    def get_default_reward_shaping(self) -> dict[str, float]:
        return dict(DEFAULT_DEATHMATCH_SHAPING)

    def set_reward_shaping(self, reward_shaping: dict[str, Any], agent_idx: int | slice) -> None:
        """One player per env: ``agent_idx`` is accepted for the interface and ignored."""
        del agent_idx
        self.reward_shaping = {key: float(value) for key, value in reward_shaping.items()}

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self._previous = self.env.unwrapped.game_variables.copy()
        self._tally = {term: 0.0 for term in DEFAULT_DEATHMATCH_SHAPING}
        self._tally["shaped_reward"] = 0.0
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        current = self.env.unwrapped.game_variables
        deltas = self.deltas(self._previous, current)
        self._previous = current.copy()
        shaped = sum(self.reward_shaping.get(term, 0.0) * value for term, value in deltas.items())
        for term, value in deltas.items():
            self._tally[term] += value
        self._tally["shaped_reward"] += shaped
        if terminated or truncated:
            outcome = {**info, **self._tally, **match_standings(self.env.unwrapped)}
            objective = float(self.true_objective_func(outcome))
            info = {**info, "true_objective": objective, "episode_extra_stats": dict(self._tally)}
        return obs, reward + shaped, terminated, truncated, info

    def deltas(self, previous: np.ndarray, current: np.ndarray) -> dict[str, float]:
        """How much each shaped quantity changed between two readings of the game variables."""
        change = current - previous
        out = {term: float(change[column]) for term, column in self._columns.items()}
        # a death and the respawn that refills health and ammo may fall on the same step or on consecutive ones
        pickups = out["death"] <= 0 and previous[self._health] > 0
        out["health_pickup"] = max(0.0, float(change[self._health])) if pickups else 0.0
        out["armor_pickup"] = max(0.0, float(change[self._armor])) if pickups else 0.0
        out["weapon_pickup"] = float(np.clip(change[self._weapon_columns], 0, None).sum()) if pickups else 0.0
        out["ammo_pickup"] = float(np.clip(change[self._ammo_columns], 0, None).sum()) if pickups else 0.0
        return out
