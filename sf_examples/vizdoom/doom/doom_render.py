"""Turning VizDoom observations into pictures: one frame as an RGB image, several as one grid image."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def cvt_doom_obs(obs: Any, render_mode: str | None = "rgb_array") -> np.ndarray:
    """One observation (CHW or HWC screen, or a dict with the screen under ``obs``) as an HWC uint8 image; for
    ``render_mode="human"`` in the BGR channel order OpenCV windows expect."""
    screen = np.asarray(obs["obs"] if isinstance(obs, dict) else obs)
    if screen.ndim != 3:
        raise ValueError(f"a VizDoom screen has 3 dimensions (CHW or HWC), got shape {screen.shape}")
    if screen.shape[0] in (1, 3) and screen.shape[-1] not in (1, 3):
        screen = screen.transpose(1, 2, 0)
    if screen.shape[-1] == 1:
        screen = np.repeat(screen, 3, axis=-1)
    image = np.ascontiguousarray(screen.astype(np.uint8, copy=False))
    return image[..., ::-1].copy() if render_mode == "human" else image


def concat_grid(obs: Sequence[Any], render_mode: str | None = "rgb_array") -> np.ndarray:
    """The observations of several envs or agents tiled row by row in a near-square grid (empty cells black)."""
    images = [cvt_doom_obs(o, render_mode) for o in obs]
    if not images:
        raise ValueError("concat_grid needs at least one observation")
    height, width, channels = images[0].shape
    cols = math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / cols)
    grid = np.zeros((rows * height, cols * width, channels), dtype=np.uint8)
    for i, image in enumerate(images):
        r, c = divmod(i, cols)
        grid[r * height : (r + 1) * height, c * width : (c + 1) * width] = image
    return grid
