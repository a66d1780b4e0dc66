"""Cut a window around the agent out of a grid observation (glyphs, characters, colours) inside the model."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Crop(nn.Module):
    """Windows of ``height_target x width_target`` cells of ``height x width`` grids, each centred on its own cell.

    ``forward(inputs, coordinates)``: ``inputs`` is ``[B, height, width]`` or ``[B, C, height, width]``,
    ``coordinates`` is ``[B, 2]`` as ``(x, y)`` = (column, row), the order of NLE's ``blstats``. Cells beyond the
    grid's edge read 0. The window of an even size has one more cell before the centre than after it.
    """

    def __init__(self, height: int, width: int, height_target: int, width_target: int) -> None:
        super().__init__()
        if min(height, width, height_target, width_target) <= 0:
            raise ValueError(f"Crop sizes must be positive, got {height}x{width} -> {height_target}x{width_target}")
        self.height, self.width = height, width
        self.height_target, self.width_target = height_target, width_target
        self.register_buffer("row_offsets", torch.arange(height_target) - height_target // 2, persistent=False)
        self.register_buffer("col_offsets", torch.arange(width_target) - width_target // 2, persistent=False)

    def forward(self, inputs: Tensor, coordinates: Tensor) -> Tensor:
        squeeze = inputs.dim() == 3
        grid = inputs.unsqueeze(1) if squeeze else inputs  # [B, C, H, W]
        if grid.shape[-2:] != (self.height, self.width):
            raise ValueError(f"Crop expects {self.height}x{self.width} grids, got {tuple(grid.shape[-2:])}")
        coords = coordinates.long()
        rows = coords[:, 1:2] + self.row_offsets  # [B, h]
        cols = coords[:, 0:1] + self.col_offsets  # [B, w]
        inside = ((rows >= 0) & (rows < self.height)).unsqueeze(2) & ((cols >= 0) & (cols < self.width)).unsqueeze(1)
        rows, cols = rows.clamp(0, self.height - 1), cols.clamp(0, self.width - 1)
        batch = torch.arange(grid.shape[0], device=grid.device).view(-1, 1, 1)
        window = grid.permute(0, 2, 3, 1)[batch, rows.unsqueeze(2), cols.unsqueeze(1)]  # [B, h, w, C]
        window = window * inside.unsqueeze(-1).to(window.dtype)
        window = window.permute(0, 3, 1, 2)  # [B, C, h, w]
        return window.squeeze(1) if squeeze else window
