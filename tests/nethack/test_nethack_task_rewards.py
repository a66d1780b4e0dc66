"""The task scores of sf_examples.nethack.utils.task_rewards on scripted observations."""

from __future__ import annotations

import pytest
from nethack_fakes import UNEXPLORED, make_obs, requires_nle

from sf_examples.nethack.utils import blstats as bl
from sf_examples.nethack.utils.task_rewards import (
    EatingScore,
    GoldScore,
    OracleScore,
    Score,
    ScoutScore,
    SokobanFillPitScore,
    SokobanReachedScore,
    SokobanSolvedLevelsScore,
    SokobanSolvedScore,
    StaircasePetScore,
    StaircaseScore,
)


def play(score: Score, observations: list[dict]) -> float:
    score.reset_score()
    for last, obs in zip(observations[:-1], observations[1:], strict=True):
        score.update(last, obs)
    return score.score


def test_gold_counts_only_gold_picked_up() -> None:
    gold = [make_obs(gold=g) for g in (0, 5, 5, 2, 12)]
    assert play(GoldScore(), gold) == 15.0  # +5, spending 3 does not count, +10


def test_eating_counts_hunger_relieved() -> None:
    hunger = [make_obs(hunger=h) for h in (1, 2, 3, 1, 1, 0)]
    assert play(EatingScore(), hunger) == 3.0  # Weak -> Not hungry (2), Not hungry -> Satiated (1)


def test_scout_counts_new_cells_per_level() -> None:
    seen = [make_obs(explored=e, depth=d) for e, d in ((10, 1), (30, 1), (5, 2), (30, 1), (40, 1))]
    # 20 new on level 1, 5 on level 2, nothing new on returning to 30 seen cells, then 10 more
    assert play(ScoutScore(unexplored_glyph=UNEXPLORED), seen) == 35.0


def test_staircase_counts_new_depths_only() -> None:
    depths = [make_obs(depth=d) for d in (1, 2, 1, 2, 3)]
    assert play(StaircaseScore(), depths) == 2.0


def test_scores_ignore_steps_outside_the_game() -> None:
    after_death = make_obs(gold=0)
    after_death["blstats"][:] = 0
    assert play(GoldScore(), [make_obs(gold=50), after_death, make_obs(gold=80)]) == 0.0


def test_oracle_scores_once_when_adjacent() -> None:
    oracle = 123
    near = make_obs(x=10, y=5)
    near["glyphs"][5, 11] = oracle
    far = make_obs(x=10, y=5)
    far["glyphs"][5, 15] = oracle
    assert play(OracleScore(oracle_glyph=oracle), [far, far]) == 0.0
    assert play(OracleScore(oracle_glyph=oracle), [far, near, near, far, near]) == 1.0


def test_sokoban_scores() -> None:
    soko = bl.SOKOBAN_DUNGEON
    path = [make_obs(dnum=0, depth=6), make_obs(dnum=soko, depth=5)]
    path += [make_obs(dnum=soko, depth=5, message="The boulder fills a pit."), make_obs(dnum=soko, depth=5)]
    path += [make_obs(dnum=soko, depth=4), make_obs(dnum=soko, depth=3), make_obs(dnum=soko, depth=2)]
    assert play(SokobanReachedScore(), path) == 1.0
    assert play(SokobanFillPitScore(), path) == 1.0
    assert play(SokobanSolvedLevelsScore(), path) == 3.0
    assert play(SokobanSolvedScore(), path) == 1.0
    assert play(SokobanSolvedScore(), path[:-1]) == 0.0  # two levels solved: not yet the whole branch


def test_fill_pit_outside_sokoban_does_not_count() -> None:
    obs = [make_obs(dnum=0), make_obs(dnum=0, message="The boulder fills a pit.")]
    assert play(SokobanFillPitScore(), obs) == 0.0


def test_base_score_names_the_missing_method() -> None:
    with pytest.raises(NotImplementedError, match="reward"):
        Score().update(make_obs(), make_obs())


@requires_nle
def test_staircase_pet_needs_the_pet_next_to_the_agent() -> None:
    from nle import nethack

    pet_glyph = nethack.GLYPH_PET_OFF
    with_pet = make_obs(depth=1, x=10, y=5)
    with_pet["glyphs"][6, 10] = pet_glyph
    assert play(StaircasePetScore(), [with_pet, make_obs(depth=2)]) == 1.0
    assert play(StaircasePetScore(), [make_obs(depth=1), make_obs(depth=2)]) == 0.0


@requires_nle
def test_glyph_constants_come_from_nle() -> None:
    from nle import nethack

    assert ScoutScore().unexplored_glyph == nethack.GLYPH_CMAP_OFF == UNEXPLORED
    oracle = OracleScore().oracle_glyph
    assert nethack.permonst(nethack.glyph_to_mon(oracle)).mname == "Oracle"
