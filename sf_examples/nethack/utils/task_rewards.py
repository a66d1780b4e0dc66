"""Task scores: how far an episode got on the NetHack sub-goals that NLE's task envs reward, measured on any env.

Each :class:`Score` watches consecutive observations (the ``blstats``, ``glyphs`` and ``message`` keys) and keeps a
running total in ``score``. ``TaskRewardsInfoWrapper`` (``utils/wrappers/task_rewards.py``) runs all of them beside
training, so a ``nethack_challenge`` run also reports, say, how much it explored (``policy_stats/avg_scout_score``)
without changing its reward.

The scores only read observations, so they work on every ``nethack_*`` env; glyph constants come from ``nle`` when
the score is created (glyph numbering differs between NetHack versions).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sf_examples.nethack.utils import blstats as bl

Obs = dict[str, np.ndarray]


def _message(obs: Obs) -> str:
    raw = np.asarray(obs.get("message", ()), dtype=np.uint8).tobytes()
    return raw.split(b"\0", 1)[0].decode("latin-1")


def _in_game(obs: Obs) -> bool:
    """NLE zeroes ``blstats`` before the game starts and after it ends; such observations change no score."""
    return bool(np.any(obs["blstats"]))


def _neighbourhood(glyphs: np.ndarray, blstats: np.ndarray) -> np.ndarray:
    x, y = int(blstats[bl.X]), int(blstats[bl.Y])
    return glyphs[max(0, y - 1) : y + 2, max(0, x - 1) : x + 2]


def _nethack() -> Any:
    from nle import nethack

    return nethack


class Score:
    """A running task score. Subclasses implement :meth:`reward` (the increment for one step); ``name`` is the key
    the total is reported under in ``episode_extra_stats``."""

    name = "score"

    def __init__(self) -> None:
        self.score = 0.0

    def reset_score(self) -> None:
        """Start a new episode."""
        self.score = 0.0

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        """What the step from ``last_obs`` to ``obs`` adds to the score (0 outside the game)."""
        raise NotImplementedError(f"{type(self).__name__} must implement reward(last_obs, obs, action)")

    def update(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        """Add one step's :meth:`reward` to ``score`` and return it."""
        if not (_in_game(last_obs) and _in_game(obs)):
            return 0.0
        increment = float(self.reward(last_obs, obs, action))
        self.score += increment
        return increment


class GoldScore(Score):
    """Gold picked up: every increase of the purse (spending does not count against it)."""

    name = "gold_score"

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        return max(0, int(obs["blstats"][bl.GOLD]) - int(last_obs["blstats"][bl.GOLD]))


class EatingScore(Score):
    """Hunger relieved: each step by which the hunger status improves (Weak to Hungry, Hungry to Not hungry, ...)."""

    name = "eating_score"

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        return max(0, int(last_obs["blstats"][bl.HUNGER_STATE]) - int(obs["blstats"][bl.HUNGER_STATE]))


class ScoutScore(Score):
    """Map cells seen: on each level (dungeon and level number), the growth of the count of cells that are no longer
    unexplored stone. The view the episode starts with does not count; returning to a level adds only what is new
    there."""

    name = "scout_score"

    def __init__(self, unexplored_glyph: int | None = None) -> None:
        super().__init__()
        self.unexplored_glyph = _nethack().GLYPH_CMAP_OFF if unexplored_glyph is None else unexplored_glyph
        self.explored: dict[tuple[int, int], int] = {}

    def reset_score(self) -> None:
        super().reset_score()
        self.explored = {}

    def _level_and_seen(self, obs: Obs) -> tuple[tuple[int, int], int]:
        blstats = obs["blstats"]
        level = (int(blstats[bl.DUNGEON_NUMBER]), int(blstats[bl.LEVEL_NUMBER]))
        return level, int(np.count_nonzero(obs["glyphs"] != self.unexplored_glyph))

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        start_level, start_seen = self._level_and_seen(last_obs)
        self.explored.setdefault(start_level, start_seen)  # what the episode starts with is not discovered
        level, seen = self._level_and_seen(obs)
        before = self.explored.get(level, 0)
        self.explored[level] = max(before, seen)
        return max(0, seen - before)


class StaircaseScore(Score):
    """Levels descended: 1 each time the agent reaches a depth deeper than any before in the episode."""

    name = "staircase_score"

    def __init__(self) -> None:
        super().__init__()
        self.deepest = 0

    def reset_score(self) -> None:
        super().reset_score()
        self.deepest = 0

    def _descended(self, last_obs: Obs, obs: Obs) -> bool:
        depth = int(obs["blstats"][bl.DEPTH])
        self.deepest = max(self.deepest, int(last_obs["blstats"][bl.DEPTH]))
        if depth > self.deepest:
            self.deepest = depth
            return True
        return False

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        return 1.0 if self._descended(last_obs, obs) else 0.0


class StaircasePetScore(StaircaseScore):
    """Levels descended with the pet: as :class:`StaircaseScore`, counted only when a pet stood next to the agent
    on the step before it went down (a pet adjacent when you take the stairs follows you)."""

    name = "staircase_pet_score"

    def __init__(self) -> None:
        super().__init__()
        self._is_pet = _nethack().glyph_is_pet

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        pet_adjacent = bool(np.any(self._is_pet(_neighbourhood(last_obs["glyphs"], last_obs["blstats"]))))
        return 1.0 if self._descended(last_obs, obs) and pet_adjacent else 0.0


def _oracle_glyph() -> int:
    nethack = _nethack()
    for glyph in range(nethack.GLYPH_MON_OFF, nethack.GLYPH_PET_OFF):
        if nethack.permonst(nethack.glyph_to_mon(glyph)).mname == "Oracle":
            return glyph
    raise RuntimeError("this NetHack build has no Oracle monster")


class OracleScore(Score):
    """Reaching the Oracle: 1 the first time in an episode the agent stands next to her."""

    name = "oracle_score"

    def __init__(self, oracle_glyph: int | None = None) -> None:
        super().__init__()
        self.oracle_glyph = _oracle_glyph() if oracle_glyph is None else oracle_glyph

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        if self.score > 0:
            return 0.0
        return 1.0 if np.any(_neighbourhood(obs["glyphs"], obs["blstats"]) == self.oracle_glyph) else 0.0


def _in_sokoban(obs: Obs) -> bool:
    return int(obs["blstats"][bl.DUNGEON_NUMBER]) == bl.SOKOBAN_DUNGEON


class SokobanReachedScore(Score):
    """Entering Sokoban: 1 the first time in an episode the agent is in the Sokoban branch."""

    name = "sokobanreached_score"

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        return 1.0 if self.score == 0 and _in_sokoban(obs) else 0.0


class SokobanFillPitScore(Score):
    """Sokoban holes filled: 1 for every boulder pushed into a pit or hole there (NetHack says so in its message)."""

    name = "sokobanfillpit_score"
    MESSAGES = ("fills a pit", "plugs a hole", "plugs a trap door")

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        if not _in_sokoban(obs):
            return 0.0
        message = _message(obs)
        return 1.0 if any(text in message for text in self.MESSAGES) else 0.0


class SokobanSolvedLevelsScore(Score):
    """Sokoban levels solved: 1 each time the agent arrives on a Sokoban level above every one it has been on.

    The way up from a Sokoban level opens only once its holes are filled, so going up a level means the one below
    was solved (the branch is entered from below, at its first level).
    """

    name = "sokobansolvedlevels_score"
    # the first Sokoban level is entered from the Dungeons of Doom: only arrivals above it count
    NUM_LEVELS = 4

    def __init__(self) -> None:
        super().__init__()
        self.highest: int | None = None

    def reset_score(self) -> None:
        super().reset_score()
        self.highest = None

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        if not _in_sokoban(obs):
            return 0.0
        depth = int(obs["blstats"][bl.DEPTH])
        if self.highest is None:
            self.highest = depth
            return 0.0
        if depth < self.highest:
            self.highest = depth
            return 1.0
        return 0.0


class SokobanSolvedScore(SokobanSolvedLevelsScore):
    """Sokoban solved: 1 once every level below the prize level is solved (the agent reached the top level)."""

    name = "sokobansolved_score"

    def __init__(self) -> None:
        super().__init__()
        self.levels_solved = 0.0

    def reset_score(self) -> None:
        super().reset_score()
        self.levels_solved = 0.0

    def reward(self, last_obs: Obs, obs: Obs, action: int | None = None) -> float:
        self.levels_solved += super().reward(last_obs, obs, action)
        return 1.0 if self.score == 0 and self.levels_solved >= self.NUM_LEVELS - 1 else 0.0


def default_scores() -> list[Score]:
    """One of every task score, as the family's envs report them."""
    return [
        EatingScore(),
        GoldScore(),
        ScoutScore(),
        StaircaseScore(),
        StaircasePetScore(),
        OracleScore(),
        SokobanReachedScore(),
        SokobanFillPitScore(),
        SokobanSolvedLevelsScore(),
        SokobanSolvedScore(),
    ]
