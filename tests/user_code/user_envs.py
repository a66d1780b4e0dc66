"""Small envs of the kind users write for themselves: CartPole seen as an image, as a dict, and by two agents at once.

CartPole's dynamics (Gymnasium's ``CartPole-v1``) drawn into a tiny ``3 x 36 x 48`` uint8 image: channel 0 marks the
cart's column, channel 1 the pole tip, channel 2 encodes both velocities as the brightness of two rows. 36 x 48 is
about the smallest frame the library's ``convnet_simple`` accepts.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np

HEIGHT, WIDTH = 36, 48
IMAGE_SPACE = gym.spaces.Box(0, 255, (3, HEIGHT, WIDTH), dtype=np.uint8)
X_LIMIT, POLE_PIXELS = 2.4, 14


def draw_pole(state: np.ndarray) -> np.ndarray:
    """The CartPole state ``(x, x_dot, theta, theta_dot)`` as a ``3 x HEIGHT x WIDTH`` uint8 image."""
    x, x_dot, theta, theta_dot = (float(v) for v in state)
    image = np.zeros(IMAGE_SPACE.shape, dtype=np.uint8)
    column = int(np.clip((x + X_LIMIT) / (2 * X_LIMIT) * (WIDTH - 1), 0, WIDTH - 1))
    image[0, HEIGHT - 6 :, max(column - 2, 0) : column + 3] = 255
    tip_row = int(np.clip(HEIGHT - 6 - POLE_PIXELS * np.cos(theta), 0, HEIGHT - 1))
    tip_column = int(np.clip(column + POLE_PIXELS * np.sin(theta), 0, WIDTH - 1))
    image[1, max(tip_row - 1, 0) : tip_row + 2, max(tip_column - 1, 0) : tip_column + 2] = 255
    image[2, 0] = int(np.clip(128 + 60 * x_dot, 0, 255))
    image[2, 1] = int(np.clip(128 + 60 * theta_dot, 0, 255))
    return image


class ImagePoleEnv(gym.Env):
    """CartPole with image observations (``IMAGE_SPACE``); episodes end as CartPole's do (500 steps at most)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, render_mode: str | None = None) -> None:
        self.pole = gym.make("CartPole-v1")
        self.observation_space = IMAGE_SPACE
        self.action_space = self.pole.action_space
        self.render_mode = render_mode
        self.state = np.zeros(4)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.state, info = self.pole.reset(seed=seed)
        return draw_pole(self.state), info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.state, reward, terminated, truncated, info = self.pole.step(int(action))
        return draw_pole(self.state), float(reward), terminated, truncated, info

    def render(self) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(draw_pole(self.state), 0, -1))


class DictPoleEnv(ImagePoleEnv):
    """CartPole observed twice: the image (``pixels``) and the raw state vector (``vector``)."""

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        vector = gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32)
        self.observation_space = gym.spaces.Dict({"pixels": IMAGE_SPACE, "vector": vector})

    def _observe(self) -> dict[str, np.ndarray]:
        return {"pixels": draw_pole(self.state), "vector": np.asarray(self.state, dtype=np.float32)}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        _, info = super().reset(seed=seed, options=options)
        return self._observe(), info

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        _, reward, terminated, truncated, info = super().step(action)
        return self._observe(), reward, terminated, truncated, info


class TwoPolesEnv(gym.Env):
    """Two agents, each balancing its own image pole; an agent whose episode ended is reset alone (auto-reset), and
    reports how long it lasted in ``episode_extra_stats``."""

    def __init__(self, render_mode: str | None = None) -> None:
        self.num_agents = 2
        self.is_multiagent = True
        self.poles = [ImagePoleEnv() for _ in range(self.num_agents)]
        self.observation_space = IMAGE_SPACE
        self.action_space = self.poles[0].action_space
        self.render_mode = render_mode
        self.lengths = [0] * self.num_agents

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[list, list]:
        seeds = [None, None] if seed is None else [seed, seed + 1]
        observations = [pole.reset(seed=s)[0] for pole, s in zip(self.poles, seeds, strict=True)]
        self.lengths = [0] * self.num_agents
        return observations, [{} for _ in self.poles]

    def step(self, actions: Sequence[int]) -> tuple[list, list, list, list, list]:
        results = [pole.step(int(a)) for pole, a in zip(self.poles, np.asarray(actions).reshape(-1), strict=True)]
        observations, rewards, terminated, truncated, infos = (list(column) for column in zip(*results, strict=True))
        for agent, pole in enumerate(self.poles):
            self.lengths[agent] += 1
            if terminated[agent] or truncated[agent]:
                infos[agent] = {"episode_extra_stats": {"pole_length": float(self.lengths[agent])}}
                observations[agent], _ = pole.reset()
                self.lengths[agent] = 0
        return observations, rewards, terminated, truncated, infos

    def render(self) -> np.ndarray:
        return np.concatenate([pole.render() for pole in self.poles], axis=1)
