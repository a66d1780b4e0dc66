"""How the two custom-env examples draw themselves: their state is a small grid of cells, shown as an RGB image
(``render_mode="rgb_array"``, for ``--save_video``) or as text on stdout (``"human"``).

An env that mixes :class:`CellRendering` in before ``gym.Env`` writes ``cell_colors()`` and ``text_frame()`` and
calls ``render_if_human()`` at the end of ``reset()`` and ``step()``.
"""

from __future__ import annotations

import numpy as np

CELL_PIXELS = 16  # side of one cell in rendered frames


class CellRendering:
    """Gymnasium's ``render()`` for envs drawn as cells; the env sets ``render_mode``."""

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 8}
    render_mode: str | None = None

    def cell_colors(self) -> np.ndarray:
        """[rows, cols, 3] uint8: one colour per cell."""
        raise NotImplementedError

    def text_frame(self) -> str:
        raise NotImplementedError

    def render(self) -> np.ndarray | None:
        if self.render_mode == "rgb_array":
            cells = self.cell_colors()
            return np.repeat(np.repeat(cells, CELL_PIXELS, axis=0), CELL_PIXELS, axis=1)
        if self.render_mode == "human":
            print(self.text_frame(), flush=True)
        return None

    def render_if_human(self) -> None:
        # Gymnasium's contract: human rendering happens inside reset()/step(), callers never call render()
        if self.render_mode == "human":
            self.render()
