"""The NetHack wrappers and the cell renderer, on a scripted stand-in for NLE."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from nethack_fakes import UNEXPLORED, ScriptedNetHack, make_obs, requires_nle

from sf_examples.nethack.utils import blstats as bl
from sf_examples.nethack.utils.render import PALETTE, char_bitmaps, crop_cells, render_cells
from sf_examples.nethack.utils.task_rewards import GoldScore, ScoutScore
from sf_examples.nethack.utils.wrappers.blstats_info import BlstatsInfoWrapper
from sf_examples.nethack.utils.wrappers.no_progress_timeout import NoProgressTimeout
from sf_examples.nethack.utils.wrappers.prev_actions import PrevActionsWrapper
from sf_examples.nethack.utils.wrappers.task_rewards import TaskRewardsInfoWrapper
from sf_examples.nethack.utils.wrappers.tile_tty import TileTTY


def run_to_end(env: gym.Env, action: int = 3) -> dict:
    env.reset(seed=0)
    while True:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info


def test_blstats_info_reports_the_last_in_game_statistics() -> None:
    script = [make_obs(time=1, score=0), make_obs(time=5, score=20, depth=2), make_obs(time=9, score=40, depth=3)]
    env = BlstatsInfoWrapper(ScriptedNetHack(script, zero_at_end=True))
    stats = run_to_end(env)["episode_extra_stats"]
    # the game ended (blstats zeroed): the values are those of the step before
    assert stats["score"] == 20.0 and stats["dlvl"] == 2.0 and stats["turns"] == 5.0
    assert stats["max_hitpoints"] == 14.0


def test_no_progress_timeout_truncates_when_the_clock_stands_still() -> None:
    script = [make_obs(time=1), make_obs(time=2)] + [make_obs(time=2)] * 5 + [make_obs(time=3)]
    env = NoProgressTimeout(ScriptedNetHack(script), no_progress_timeout=3)
    env.reset()
    ends = [env.step(0)[3] for _ in range(4)]
    assert ends == [False, False, False, True]  # the third step in a row at turn 2 cuts the episode


def test_no_progress_timeout_zero_never_cuts_and_negative_is_rejected() -> None:
    script = [make_obs(time=1)] * 6
    env = NoProgressTimeout(ScriptedNetHack(script), no_progress_timeout=0)
    env.reset()
    assert not any(env.step(0)[3] for _ in range(5))
    with pytest.raises(ValueError, match="no_progress_timeout"):
        NoProgressTimeout(ScriptedNetHack(script), no_progress_timeout=-1)


def test_prev_actions_holds_the_last_action() -> None:
    env = PrevActionsWrapper(ScriptedNetHack([make_obs()] * 4, num_actions=23))
    obs, _ = env.reset()
    assert obs["prev_actions"].tolist() == [0]
    assert env.observation_space["prev_actions"].high.tolist() == [22]
    assert env.step(7)[0]["prev_actions"].tolist() == [7]
    assert env.step(12)[0]["prev_actions"].tolist() == [12]


def test_task_rewards_wrapper_reports_totals_and_keeps_the_reward() -> None:
    script = [make_obs(gold=0, explored=5), make_obs(gold=3, explored=9), make_obs(gold=10, explored=20)]
    env = TaskRewardsInfoWrapper(ScriptedNetHack(script), [GoldScore(), ScoutScore(UNEXPLORED)])
    env.reset()
    _, reward, *_ = env.step(0)
    assert reward == 1.0  # the scripted env's reward, untouched
    info = env.step(0)[4]
    assert info["episode_extra_stats"] == {"gold_score": 10.0, "scout_score": 15.0}
    env.reset()  # a new episode starts from zero
    assert [score.score for score in env.scores] == [0.0, 0.0]


def test_task_rewards_wrapper_keeps_other_extra_stats() -> None:
    script = [make_obs(gold=0), make_obs(gold=4, score=7)]
    env = TaskRewardsInfoWrapper(BlstatsInfoWrapper(ScriptedNetHack(script)), [GoldScore()])
    stats = run_to_end(env)["episode_extra_stats"]
    assert stats["gold_score"] == 4.0 and stats["score"] == 7.0


def test_task_rewards_wrapper_needs_nle_keys() -> None:
    env = ScriptedNetHack([make_obs()])
    env.observation_space = gym.spaces.Dict({"blstats": env.observation_space["blstats"]})
    with pytest.raises(ValueError, match="glyphs"):
        TaskRewardsInfoWrapper(env, [GoldScore()])


def test_tile_tty_adds_a_crop_centred_on_the_agent() -> None:
    env = TileTTY(ScriptedNetHack([make_obs(x=10, y=5)] * 2), crop_size=5, rescale_font_size=(4, 3))
    obs, _ = env.reset()
    image = obs["screen_image"]
    assert image.shape == env.observation_space["screen_image"].shape == (3, 20, 15)
    assert image.dtype == np.uint8
    # only the agent's cell (the centre, white '@') is drawn; every other cell of the crop is blank
    centre = image[:, 8:12, 6:9]
    assert centre.max() == 255 and image.sum() == centre.sum()
    frame = env.render()
    assert frame.shape == (24 * 9, 80 * 9, 3)


def test_tile_tty_without_crop_only_renders() -> None:
    env = TileTTY(ScriptedNetHack([make_obs()] * 2), crop_size=0)
    obs, _ = env.reset()
    assert "screen_image" not in obs and "screen_image" not in env.observation_space.spaces
    assert env.render().shape == (216, 720, 3)


def test_char_bitmaps_differ_for_every_visible_code() -> None:
    bitmaps = char_bitmaps(6, 6)
    assert bitmaps.shape == (256, 6, 6)
    assert not bitmaps[0].any() and not bitmaps[ord(" ")].any()
    visible = bitmaps[[c for c in range(256) if c not in (0, 32)]].reshape(254, -1)
    assert len({row.tobytes() for row in visible}) == 254
    with pytest.raises(ValueError, match="3x3"):
        char_bitmaps(2, 6)


def test_render_cells_colours_and_layout() -> None:
    chars = np.array([[ord("@"), ord(" ")]], dtype=np.uint8)
    colors = np.array([[1, 15]], dtype=np.int8)
    image = render_cells(chars, colors, (3, 3))
    assert image.shape == (3, 3, 6)
    assert image[:, 1, 1].tolist() == PALETTE[1].tolist()  # the lit centre of '@' in red
    assert not image[:, :, 3:].any()  # the space stays black


def test_crop_cells_pads_beyond_the_edge() -> None:
    grid = np.arange(12).reshape(3, 4)
    assert crop_cells(grid, 0, 0, 3, fill=-1).tolist() == [[-1, -1, -1], [-1, 0, 1], [-1, 4, 5]]
    assert crop_cells(grid, 1, 2, 2).tolist() == [[1, 2], [5, 6]]


@requires_nle
def test_blstats_positions_are_nles() -> None:
    from nle import nethack

    names = {
        "X": bl.X, "Y": bl.Y, "SCORE": bl.SCORE, "HP": bl.HITPOINTS, "HPMAX": bl.MAX_HITPOINTS, "DEPTH": bl.DEPTH,
        "GOLD": bl.GOLD, "ENEMAX": bl.MAX_ENERGY, "AC": bl.ARMOR_CLASS, "XP": bl.EXPERIENCE_LEVEL,
        "EXP": bl.EXPERIENCE_POINTS, "TIME": bl.TIME, "HUNGER": bl.HUNGER_STATE, "DNUM": bl.DUNGEON_NUMBER,
        "DLEVEL": bl.LEVEL_NUMBER, "ALIGN": bl.ALIGNMENT,
    }  # fmt: skip
    assert {name: getattr(nethack, f"NLE_BL_{name}") for name in names} == names
    assert nethack.NLE_BLSTATS_SIZE == bl.NUM_BLSTATS
