"""The terminal as pixels: a crop around the agent as an image observation, the whole screen as ``render()``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from sf_examples.nethack.utils.render import crop_cells, render_cells

SCREEN_IMAGE_KEY = "screen_image"
TTY_KEYS = ("tty_chars", "tty_colors", "tty_cursor")


class TileTTY(gym.Wrapper):
    """Draw NLE's terminal (``tty_chars``, ``tty_colors``) with the family's cell renderer (``utils/render.py``).

    - ``crop_size`` > 0 adds ``obs["screen_image"]``: the ``crop_size x crop_size`` cells around the cursor (where
      NetHack leaves it: on the agent, while no prompt is open), each drawn at ``rescale_font_size`` (height, width)
      pixels, as a ``[3, H, W]`` uint8 image. This is what ``--add_image_observation`` gives the model.
    - ``render()`` returns the whole 24x80 terminal as an ``[H, W, 3]`` frame, ``font_size`` pixels per cell, for
      videos (``render_mode="rgb_array"``).
    """

    def __init__(
        self,
        env: gym.Env,
        font_size: int = 9,
        crop_size: int = 12,
        rescale_font_size: tuple[int, int] = (6, 6),
    ) -> None:
        super().__init__(env)
        missing = set(TTY_KEYS) - set(env.observation_space.spaces)
        if missing:
            raise ValueError(f"TileTTY needs the observation keys {sorted(missing)} from NLE")
        if crop_size < 0:
            raise ValueError(f"crop_size must be >= 0 (0: no screen_image observation), got {crop_size}")
        self.font_size = int(font_size)
        self.crop_size = int(crop_size)
        self.cell_size = (int(rescale_font_size[0]), int(rescale_font_size[1]))
        self._last_obs: dict[str, Any] | None = None
        if self.crop_size:
            height, width = self.crop_size * self.cell_size[0], self.crop_size * self.cell_size[1]
            spaces = dict(env.observation_space.spaces)
            spaces[SCREEN_IMAGE_KEY] = gym.spaces.Box(0, 255, (3, height, width), dtype=np.uint8)
            self.observation_space = gym.spaces.Dict(spaces)

    @property
    def render_mode(self) -> str | None:
        return "rgb_array"

    def _observe(self, obs: dict[str, Any]) -> dict[str, Any]:
        self._last_obs = {key: np.array(obs[key]) for key in TTY_KEYS}
        if not self.crop_size:
            return obs
        row, col = (int(v) for v in obs["tty_cursor"])
        chars = crop_cells(obs["tty_chars"], row, col, self.crop_size, fill=ord(" "))
        colors = crop_cells(obs["tty_colors"], row, col, self.crop_size)
        return {**obs, SCREEN_IMAGE_KEY: render_cells(chars, colors, self.cell_size)}

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        return self._observe(obs), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._observe(obs), reward, terminated, truncated, info

    def render(self) -> np.ndarray | None:
        if self._last_obs is None:
            return None
        image = render_cells(self._last_obs["tty_chars"], self._last_obs["tty_colors"], (self.font_size,) * 2)
        return np.ascontiguousarray(image.transpose(1, 2, 0))
