"""Character cells to pixels with numpy only: each of the 256 character codes gets a fixed bitmap, each NetHack
colour an RGB value, and a grid of (char, colour) cells becomes an image by table lookup.

The bitmaps are not letters: a code's 8 bits light 8 cells of a 3x3 pattern around a lit centre (space and NUL
stay blank), scaled to the cell size. Every code looks different, the result does not depend on fonts installed
on the machine, and rendering a crop costs two array lookups, so it is cheap enough to be an observation.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# NetHack's 16 colours (CLR_BLACK ... CLR_WHITE); black is drawn dark grey so black glyphs stay visible
PALETTE = np.array(
    [
        (64, 64, 64), (170, 0, 0), (0, 170, 0), (170, 85, 0), (0, 0, 170), (170, 0, 170), (0, 170, 170),
        (170, 170, 170), (85, 85, 85), (255, 85, 85), (85, 255, 85), (255, 255, 85), (85, 85, 255),
        (255, 85, 255), (85, 255, 255), (255, 255, 255),
    ],
    dtype=np.uint8,
)  # fmt: skip

# the 3x3 pattern's cells in bit order (row, column), the centre (1, 1) is lit for every visible code
_BIT_CELLS = ((0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (2, 2))
_BLANK_CODES = (0, ord(" "))


@lru_cache(maxsize=8)
def char_bitmaps(height: int, width: int) -> np.ndarray:
    """``[256, height, width]`` booleans: the bitmap of every character code at that cell size."""
    if height < 3 or width < 3:
        raise ValueError(f"a character cell needs at least 3x3 pixels, got {height}x{width}")
    patterns = np.zeros((256, 3, 3), dtype=bool)
    for code in range(256):
        if code in _BLANK_CODES:
            continue
        patterns[code, 1, 1] = True
        for bit, (row, col) in enumerate(_BIT_CELLS):
            patterns[code, row, col] = bool((code >> bit) & 1)
    rows = np.minimum(np.arange(height) * 3 // height, 2)
    cols = np.minimum(np.arange(width) * 3 // width, 2)
    bitmaps = patterns[:, rows][:, :, cols]
    bitmaps.setflags(write=False)
    return bitmaps


def render_cells(chars: np.ndarray, colors: np.ndarray, cell_size: tuple[int, int]) -> np.ndarray:
    """A ``[3, rows * h, cols * w]`` uint8 image (channels first) of the ``[rows, cols]`` cells."""
    height, width = cell_size
    bitmaps = char_bitmaps(height, width)[chars.astype(np.uint8)]  # [R, C, h, w]
    rgb = PALETTE[np.asarray(colors).astype(np.int64) & 15]  # [R, C, 3]
    image = bitmaps[..., None] * rgb[:, :, None, None, :]  # [R, C, h, w, 3]
    rows, cols = chars.shape
    return np.ascontiguousarray(image.transpose(4, 0, 2, 1, 3).reshape(3, rows * height, cols * width))


def crop_cells(grid: np.ndarray, center_row: int, center_col: int, size: int, fill: int = 0) -> np.ndarray:
    """The ``size x size`` window of ``grid`` centred on a cell; cells outside the grid are ``fill``."""
    out = np.full((size, size), fill, dtype=grid.dtype)
    top, left = center_row - size // 2, center_col - size // 2
    rows, cols = grid.shape
    r0, r1 = max(0, top), min(rows, top + size)
    c0, c1 = max(0, left), min(cols, left + size)
    if r0 < r1 and c0 < c1:
        out[r0 - top : r1 - top, c0 - left : c1 - left] = grid[r0:r1, c0:c1]
    return out
