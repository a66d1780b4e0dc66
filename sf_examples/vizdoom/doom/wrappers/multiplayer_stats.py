"""Where the agent stands in its match: own frags against every other player's, reported at episode end."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_examples.vizdoom.doom.game_setup import vizdoom

MAX_PLAYERS = 16  # ViZDoom reports the frags of players 1..16


def standings_from_frags(own: float, others: list[float]) -> dict[str, Any]:
    """Place (1 = most frags), a tie for first, and the gap to the best other player (negative: behind)."""
    place = 1 + sum(1 for frags in others if frags > own)
    best_other = max(others) if others else own
    return {
        "FRAGCOUNT": own,
        "FINAL_PLACE": place,
        "TIED_FOR_FIRST": place == 1 and own == best_other and bool(others),
        "LEADER_GAP": own - best_other,
        "PLAYER_COUNT": len(others) + 1,
    }


def match_standings(core: Any) -> dict[str, Any]:
    """The standings of a started game (``core`` is a ``VizdoomEnv``); {} when there is no game to ask."""
    game = getattr(core, "game", None)
    if game is None:
        return {}
    gv = vizdoom().GameVariable
    own = game.get_game_variable(gv.FRAGCOUNT)
    count = min(int(game.get_game_variable(gv.PLAYER_COUNT)), MAX_PLAYERS)
    frags = [game.get_game_variable(getattr(gv, f"PLAYER{i}_FRAGCOUNT")) for i in range(1, count + 1)]
    if own in frags:
        frags.remove(own)  # the agent's own entry; the rest are the other players (agents or bots)
    return standings_from_frags(float(own), [float(f) for f in frags])


class MultiplayerStatsWrapper(gym.Wrapper):
    """At episode end adds the match standings (``FINAL_PLACE``, ``LEADER_GAP``, ...) to ``episode_extra_stats``."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            standings = {key: float(value) for key, value in match_standings(self.env.unwrapped).items()}
            info = {**info, "episode_extra_stats": {**info.get("episode_extra_stats", {}), **standings}}
        return obs, reward, terminated, truncated, info
