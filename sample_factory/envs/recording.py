"""Record what an env shows, one folder of numbered frames per episode, to look at an agent's behaviour afterwards.

Frames are PNG files written with ``imageio`` (the ``video`` extra) or, failing that, OpenCV (the ``vizdoom`` and
``atari`` extras); with neither installed they are saved as ``.npy`` arrays, with a warning, rather than lost. A
frame is what ``env.render()`` returns in ``rgb_array`` render mode; otherwise the observation itself when it is an
image (HWC or CHW, or the ``"obs"`` entry of a dict observation). Frames are written as they come, so a crashed or
interrupted run keeps everything recorded until then.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_contract import reset_inner
from sample_factory.utils.utils import log, safe_ensure_dir_exists

FrameWriter = Callable[[str, np.ndarray], str]
_IMAGE_CHANNELS = (1, 3, 4)


def _png_writer() -> FrameWriter | None:
    """``write(path_without_extension, hwc_uint8_frame) -> written path`` with the first PNG writer installed."""
    try:
        import imageio.v3 as iio

        def write_imageio(stem: str, frame: np.ndarray) -> str:
            iio.imwrite(stem + ".png", frame)
            return stem + ".png"

        return write_imageio
    except ImportError:
        pass
    try:
        import cv2

        def write_cv2(stem: str, frame: np.ndarray) -> str:
            bgr = (
                frame
                if frame.ndim == 2
                else cv2.cvtColor(frame, cv2.COLOR_RGBA2BGRA if frame.shape[2] == 4 else cv2.COLOR_RGB2BGR)
            )
            cv2.imwrite(stem + ".png", bgr)
            return stem + ".png"

        return write_cv2
    except ImportError:
        return None


def _write_npy(stem: str, frame: np.ndarray) -> str:
    np.save(stem + ".npy", frame)
    return stem + ".npy"


def as_image(value: Any) -> np.ndarray | None:
    """``value`` as an ``[H, W]`` or ``[H, W, C]`` uint8 image, or None if it does not look like an image.

    CHW arrays (channels first, as pixel envs feed convolutions) are transposed; float images in ``[0, 1]`` are
    scaled to 0..255.
    """
    if isinstance(value, dict):
        value = value.get("obs")
    if value is None:
        return None
    if hasattr(value, "detach"):  # torch tensor
        value = value.detach().cpu().numpy()
    frame = np.asarray(value)
    if frame.ndim == 3 and frame.shape[0] in _IMAGE_CHANNELS and frame.shape[-1] not in _IMAGE_CHANNELS:
        frame = frame.transpose(1, 2, 0)
    if frame.ndim == 3 and frame.shape[-1] == 1:
        frame = frame[..., 0]
    if frame.ndim not in (2, 3) or (frame.ndim == 3 and frame.shape[-1] not in _IMAGE_CHANNELS) or min(frame.shape) < 1:
        return None
    if frame.dtype != np.uint8:
        if np.issubdtype(frame.dtype, np.floating) and frame.size and float(frame.max()) <= 1.0:
            frame = frame * 255.0
        frame = np.clip(frame, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(frame)


class RecordingWrapper(gym.Wrapper):
    """Save every frame of every episode under ``record_to/ep_<NNNN>_p<player_id>/<frame>.png``.

    ``player_id`` tells apart the envs of different players (e.g. the agents of a multiplayer game, each with its own
    env) that record into the same folder. Episode numbers continue after the folders already there, so a second run
    into the same ``record_to`` adds episodes instead of overwriting them.
    """

    def __init__(self, env: gym.Env, record_to: str, player_id: int | str) -> None:
        super().__init__(env)
        self.record_to = record_to
        self.player_id = player_id
        self._write = _png_writer()
        if self._write is None:
            log.warning("RecordingWrapper: neither imageio nor OpenCV is installed, frames are saved as .npy arrays")
            self._write = _write_npy
        self._episode_idx = -1
        self.episode_dir: str | None = None
        self._frame_idx = 0
        self._warned_no_frame = False

    def _new_episode_dir(self) -> str:
        safe_ensure_dir_exists(self.record_to)
        while True:
            self._episode_idx += 1
            path = os.path.join(self.record_to, f"ep_{self._episode_idx:04d}_p{self.player_id}")
            if not os.path.exists(path):
                return safe_ensure_dir_exists(path)

    def _frame(self, obs: Any) -> np.ndarray | None:
        if getattr(self.env, "render_mode", None) == "rgb_array":
            frame = as_image(self.env.render())
            if frame is not None:
                return frame
        return as_image(obs)

    def _record(self, obs: Any) -> None:
        frame = self._frame(obs)
        if frame is None:
            if not self._warned_no_frame:
                log.warning(
                    "RecordingWrapper(player_id=%s): the env gives no image (render_mode=%r and the observation is "
                    "not an image); create it with render_mode='rgb_array' to record",
                    self.player_id,
                    getattr(self.env, "render_mode", None),
                )
                self._warned_no_frame = True
            return
        self._write(os.path.join(self.episode_dir, f"{self._frame_idx:05d}"), frame)
        self._frame_idx += 1

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = reset_inner(self.env, seed, options)
        self.episode_dir = self._new_episode_dir()
        self._frame_idx = 0
        self._record(obs)
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.episode_dir is not None:
            self._record(obs)
        return obs, reward, terminated, truncated, info
