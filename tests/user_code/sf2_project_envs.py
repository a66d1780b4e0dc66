"""Envs and wrappers as a user's project written against Sample Factory 2 has them.

- :class:`LooseDtypePoleEnv`: CartPole behind a Dict space whose arrays do not come back in the space's dtypes (a
  float64 state for a float32 Box, a float32 step counter for an int64 Box), as envs computing with Python floats
  do. Sample Factory 2 casts them into its buffers.
- :class:`LooseDtypeVectorPoleEnv`: the same with a plain float32 Box observed as float64.
- :class:`WrongShapePoleEnv`: an observation of the wrong shape, which must stay an error naming the shapes.
- :class:`FrameRecorder`: a recording wrapper whose ``reset(self)`` takes no seed (Sample Factory 2's enjoy calls
  ``env.reset()``), counting its resets and steps into a file so a test can see it was used.
- :class:`BalanceSteps`: reports how long the pole stayed up as ``info["episode_extra_stats"]["balance_steps"]``.
"""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np

STATE_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32)
COUNT_SPACE = gym.spaces.Box(0, 10_000, (1,), dtype=np.int64)
# where FrameRecorder appends "reset"/"step" counts (one line per process and env, written at close)
RECORDER_LOG_ENV = "SF2_PROJECT_RECORDER_LOG"


class LooseDtypePoleEnv(gym.Env):
    """CartPole observed as ``{"state": float64 (space float32), "count": float32 (space int64)}``."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, render_mode: str | None = None) -> None:
        self.pole = gym.make("CartPole-v1")
        self.observation_space = gym.spaces.Dict({"state": STATE_SPACE, "count": COUNT_SPACE})
        self.action_space = self.pole.action_space
        self.render_mode = render_mode
        self.steps = 0

    def _observe(self, state: np.ndarray) -> dict[str, np.ndarray]:
        return {"state": np.asarray(state, dtype=np.float64), "count": np.array([self.steps], dtype=np.float32)}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        state, info = self.pole.reset(seed=seed)
        self.steps = 0
        return self._observe(state), info

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        state, reward, terminated, truncated, info = self.pole.step(int(action))
        self.steps += 1
        return self._observe(state), float(reward), terminated, truncated, info

    def render(self) -> np.ndarray:
        return np.zeros((8, 8, 3), dtype=np.uint8)


class LooseDtypeVectorPoleEnv(gym.Wrapper):
    """CartPole whose float32 Box observations come back as float64 arrays."""

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(gym.make("CartPole-v1", render_mode=render_mode))
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32)

    def reset(self, **kwargs) -> tuple[np.ndarray, dict]:
        obs, info = self.env.reset(**kwargs)
        return np.asarray(obs, dtype=np.float64), info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return np.asarray(obs, dtype=np.float64), reward, terminated, truncated, info


class WrongShapePoleEnv(gym.Wrapper):
    """CartPole declaring 5 observation values but returning its 4."""

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(gym.make("CartPole-v1", render_mode=render_mode))
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (5,), dtype=np.float32)


class FrameRecorder(gym.Wrapper):
    """Keeps the frames of the current episode; its ``reset`` takes no seed, as many project wrappers' do."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.frames: list = []
        self.resets = 0
        self.steps = 0

    def reset(self):  # noqa: D102  (the project's signature: no seed, no options)
        self.frames = []
        self.resets += 1
        return self.env.reset()

    def step(self, action):  # noqa: D102
        self.steps += 1
        result = self.env.step(action)
        if len(self.frames) < 4:
            self.frames.append(np.asarray(result[0]).copy())
        return result

    def close(self) -> None:  # noqa: D102
        path = os.environ.get(RECORDER_LOG_ENV)
        if path and self.steps:
            with open(path, "a") as f:
                f.write(f"{os.getpid()} resets={self.resets} steps={self.steps}\n")
        super().close()


class BalanceSteps(gym.Wrapper):
    """Adds ``episode_extra_stats = {"balance_steps": n}`` to the info of the step that ends an episode."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.steps = 0

    def reset(self, **kwargs):  # noqa: D102
        self.steps = 0
        return self.env.reset(**kwargs)

    def step(self, action):  # noqa: D102
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if terminated or truncated:
            info = {**info, "episode_extra_stats": {"balance_steps": float(self.steps)}}
        return obs, reward, terminated, truncated, info


def make_loose_dtype_pole(full_env_name, cfg=None, env_config=None, render_mode=None):
    return LooseDtypePoleEnv(render_mode=render_mode)


def make_loose_dtype_vector_pole(full_env_name, cfg=None, env_config=None, render_mode=None):
    return LooseDtypeVectorPoleEnv(render_mode=render_mode)


def make_wrong_shape_pole(full_env_name, cfg=None, env_config=None, render_mode=None):
    return WrongShapePoleEnv(render_mode=render_mode)


def make_recorded_pole(full_env_name, cfg=None, env_config=None, render_mode=None):
    return FrameRecorder(gym.make("CartPole-v1", render_mode=render_mode))


def make_scored_pole(full_env_name, cfg=None, env_config=None, render_mode=None):
    return BalanceSteps(gym.make("CartPole-v1", render_mode=render_mode))


def make_scored_recorded_pole(full_env_name, cfg=None, env_config=None, render_mode=None):
    """The recorder below a wrapper whose ``reset(**kwargs)`` passes everything on."""
    return BalanceSteps(FrameRecorder(gym.make("CartPole-v1", render_mode=render_mode)))


ENV_FACTORIES = {
    "project_loose_dtype_pole": make_loose_dtype_pole,
    "project_loose_dtype_vector_pole": make_loose_dtype_vector_pole,
    "project_wrong_shape_pole": make_wrong_shape_pole,
    "project_recorded_pole": make_recorded_pole,
    "project_scored_pole": make_scored_pole,
    "project_scored_recorded_pole": make_scored_recorded_pole,
}
