"""Frames to an animated GIF in memory, e.g. a rollout for a TensorBoard or W&B summary or a model card."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

__all__ = ["encode_gif", "PILLOW_INSTALL_HINT"]

PILLOW_INSTALL_HINT = 'pip install "sample-factory[video]" (or pip install pillow)'


def encode_gif(images: Sequence[np.ndarray], fps: float) -> bytes:
    """The bytes of a looping GIF showing ``images`` at ``fps`` frames per second.

    Each image is ``[H, W, 3]`` RGB or ``[H, W]`` grey, all of one size; floats are taken as ``[0, 1]`` intensities,
    integers as ``[0, 255]``. GIF stores a frame's duration in hundredths of a second, so rates above 50 fps play
    slower than asked in most viewers. Needs Pillow (installed with the ``video`` extra).
    """
    try:
        from PIL import Image
    except ImportError as exc:
        raise ImportError(f"encode_gif needs Pillow, which is not installed: run {PILLOW_INSTALL_HINT}") from exc
    if len(images) == 0:
        raise ValueError("encode_gif needs at least one image")
    if fps <= 0:
        raise ValueError(f"encode_gif(fps={fps}): the frame rate must be positive")
    frames = [Image.fromarray(_as_uint8(image, i)) for i, image in enumerate(images)]
    sizes = {frame.size for frame in frames}
    if len(sizes) > 1:
        raise ValueError(f"encode_gif: images of different sizes {sorted(sizes)} (width, height): resize them first")
    out = io.BytesIO()
    frames[0].save(
        out, format="GIF", save_all=True, append_images=frames[1:], duration=round(1000 / fps), loop=0, optimize=False
    )
    return out.getvalue()


def _as_uint8(image: np.ndarray, index: int) -> np.ndarray:
    array = np.asarray(image)
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] != 3):
        raise ValueError(f"encode_gif: image {index} has shape {array.shape}; expected [H, W, 3] RGB or [H, W] grey")
    if np.issubdtype(array.dtype, np.floating):
        array = np.clip(array, 0.0, 1.0) * 255.0 + 0.5
    return np.clip(array, 0, 255).astype(np.uint8)
