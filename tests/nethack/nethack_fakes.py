"""A stand-in for NLE in the NetHack tests: a dict-observation env with NLE's keys and shapes, scripted per step."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from sf_examples.nethack.nethack_env import nethack_available
from sf_examples.nethack.utils import blstats as bl

requires_nle = pytest.mark.skipif(
    not nethack_available(), reason='nle is not installed (pip install "sample-factory[nethack]")'
)

UNEXPLORED = 2359  # NLE 1.3's GLYPH_CMAP_OFF; passed explicitly so the fakes need no nle


def make_obs(time: int = 1, gold: int = 0, depth: int = 1, hunger: int = 1, dnum: int = 0, x: int = 10, y: int = 5,
             message: str = "", explored: int = 0, score: int = 0) -> dict[str, np.ndarray]:  # fmt: skip
    """One NLE-shaped observation with the given statistics; the first ``explored`` map cells are seen."""
    blstats = np.zeros(bl.NUM_BLSTATS, dtype=np.int64)
    blstats[[bl.X, bl.Y, bl.TIME, bl.GOLD, bl.DEPTH, bl.HUNGER_STATE, bl.DUNGEON_NUMBER, bl.SCORE]] = (
        x, y, time, gold, depth, hunger, dnum, score,
    )  # fmt: skip
    blstats[bl.LEVEL_NUMBER] = depth
    blstats[bl.MAX_HITPOINTS] = 14
    glyphs = np.full((21, 79), UNEXPLORED, dtype=np.int16)
    glyphs.reshape(-1)[:explored] = 0
    raw = message.encode("latin-1")[:255]
    msg = np.zeros(256, dtype=np.uint8)
    msg[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    tty_chars = np.full((24, 80), ord(" "), dtype=np.uint8)
    tty_chars[y + 1, x] = ord("@")
    tty_colors = np.zeros((24, 80), dtype=np.int8)
    tty_colors[y + 1, x] = 15
    cursor = np.array([y + 1, x], dtype=np.uint8)
    return dict(blstats=blstats, glyphs=glyphs, message=msg, tty_chars=tty_chars, tty_colors=tty_colors,
                tty_cursor=cursor)  # fmt: skip


OBS_SPACE = gym.spaces.Dict(
    {
        "blstats": gym.spaces.Box(-(2**31), 2**31 - 1, (bl.NUM_BLSTATS,), dtype=np.int64),
        "glyphs": gym.spaces.Box(0, 5976, (21, 79), dtype=np.int16),
        "message": gym.spaces.Box(0, 255, (256,), dtype=np.uint8),
        "tty_chars": gym.spaces.Box(0, 255, (24, 80), dtype=np.uint8),
        "tty_colors": gym.spaces.Box(0, 31, (24, 80), dtype=np.int8),
        "tty_cursor": gym.spaces.Box(0, 255, (2,), dtype=np.uint8),
    }
)


class ScriptedNetHack(gym.Env):
    """Plays back ``script``: reset gives ``script[0]``, step ``i`` gives ``script[i]``; the last one terminates
    (with zeroed blstats when ``zero_at_end``, as NLE reports a finished game)."""

    metadata = {"render_modes": []}

    def __init__(self, script: list[dict[str, np.ndarray]], num_actions: int = 23, zero_at_end: bool = False) -> None:
        self.script = script
        self.zero_at_end = zero_at_end
        self.observation_space = OBS_SPACE
        self.action_space = gym.spaces.Discrete(num_actions)
        self.index = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.index = 0
        return dict(self.script[0]), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.index += 1
        obs = dict(self.script[self.index])
        done = self.index == len(self.script) - 1
        if done and self.zero_at_end:
            obs["blstats"] = np.zeros_like(obs["blstats"])
        return obs, 1.0, done, False, {}
