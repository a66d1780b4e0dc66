"""A DeepMind Lab level as a Gymnasium env: IMPALA's 9 discrete actions, CHW RGB frames, frame skip.

The simulator object (``deepmind_lab.Lab``) is made by a factory given to :class:`DmlabGymEnv`, so everything here
but the factory in :func:`make_lab` runs without DeepMind Lab (the tests use a scripted lab). At episode end the
info carries the level's raw score and, for DMLab-30 levels, its human-normalised score, under keys named after
the level, so multi-level runs (``dmlab_30``) keep each level's statistics apart.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import MissingDependencyError
from sf_examples.dmlab.dmlab30 import DMLAB30_LEVELS, human_normalized_score
from sf_examples.dmlab.dmlab_level_cache import DmlabLevelCache

OBS_KEY = "RGB_INTERLEAVED"
# (look left/right pixels, look down/up, strafe left/right, move back/forward, fire, jump, crouch): IMPALA's set
ACTION_SET: tuple[tuple[int, ...], ...] = (
    (0, 0, 0, 1, 0, 0, 0),  # forward
    (0, 0, 0, -1, 0, 0, 0),  # backward
    (0, 0, -1, 0, 0, 0, 0),  # strafe left
    (0, 0, 1, 0, 0, 0, 0),  # strafe right
    (-20, 0, 0, 0, 0, 0, 0),  # look left
    (20, 0, 0, 0, 0, 0, 0),  # look right
    (-20, 0, 0, 1, 0, 0, 0),  # forward + look left
    (20, 0, 0, 1, 0, 0, 0),  # forward + look right
    (0, 0, 0, 0, 1, 0, 0),  # fire
)
BUILD_HINT = (
    "DeepMind Lab envs need the Python module 'deepmind_lab', which is not on PyPI: build its wheel from source "
    "(git clone https://github.com/google-deepmind/lab; cd lab; bazel build -c opt "
    "//python/pip_package:build_pip_package; ./bazel-bin/python/pip_package/build_pip_package /tmp/dmlab_pkg; "
    "pip install /tmp/dmlab_pkg/deepmind_lab-*.whl), see docs/dmlab.md"
)

LabFactory = Callable[[str], Any]  # level path -> a deepmind_lab.Lab-like object


def import_deepmind_lab() -> Any:
    """The ``deepmind_lab`` module, or MissingDependencyError with one line saying how to build it."""
    try:
        import deepmind_lab
    except ImportError as exc:
        raise MissingDependencyError(f"{BUILD_HINT} ({exc})") from exc
    return deepmind_lab


def make_lab(width: int, height: int, renderer: str, cache_dir: str | None) -> LabFactory:
    """A factory of real ``deepmind_lab.Lab`` objects (the only code here that needs the simulator)."""
    deepmind_lab = import_deepmind_lab()
    cache = DmlabLevelCache(cache_dir) if cache_dir else None
    config = {"width": str(width), "height": str(height), "logLevel": "WARN"}
    if os.environ.get("DMLAB_DATASET_PATH"):  # brady_konkle_oliva2008 images of the psychlab levels
        config["datasetPath"] = os.environ["DMLAB_DATASET_PATH"]

    def factory(level_path: str) -> Any:
        return deepmind_lab.Lab(level_path, [OBS_KEY], config=config, renderer=renderer, level_cache=cache)

    return factory


class DmlabGymEnv(gym.Env):
    """One DeepMind Lab level; ``frameskip`` simulator frames per step (``info["num_frames"]`` says so)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(
        self, level: str, lab_factory: LabFactory, width: int = 96, height: int = 72, frameskip: int = 4,
        render_mode: str | None = None,
    ) -> None:  # fmt: skip
        self.level = level  # a DMLab-30 name, or any level path of DeepMind Lab
        self.level_path = DMLAB30_LEVELS[level].path if level in DMLAB30_LEVELS else level
        self.lab = lab_factory(self.level_path)
        self.frameskip = frameskip
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0, 255, shape=(3, height, width), dtype=np.uint8)
        self.action_space = gym.spaces.Discrete(len(ACTION_SET))
        self._actions = np.array(ACTION_SET, dtype=np.intc)
        self._last_obs = np.zeros(self.observation_space.shape, dtype=np.uint8)
        self._score = 0.0

    def _observe(self) -> np.ndarray:
        if self.lab.is_running():
            self._last_obs = np.ascontiguousarray(self.lab.observations()[OBS_KEY].transpose(2, 0, 1))
        return self._last_obs

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        lab_seed = int(self.np_random.integers(2**31 - 1))
        self.lab.reset(seed=lab_seed)
        self._score = 0.0
        return self._observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward = float(self.lab.step(self._actions[int(action)], num_steps=self.frameskip))
        self._score += reward
        terminated = not self.lab.is_running()
        info: dict[str, Any] = {"num_frames": self.frameskip}
        if terminated:
            info["episode_extra_stats"] = self.episode_stats()
        return self._observe(), reward, terminated, False, info

    def episode_stats(self) -> dict[str, float]:
        """``score/<level>`` and, for DMLab-30 levels, ``hns/<level>`` (human-normalised) of the finished episode."""
        stats = {f"score/{self.level}": self._score}
        if self.level in DMLAB30_LEVELS:
            stats[f"hns/{self.level}"] = human_normalized_score(self.level, self._score)
        return stats

    def render(self) -> np.ndarray | None:
        return self._last_obs.transpose(1, 2, 0) if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        self.lab.close()
