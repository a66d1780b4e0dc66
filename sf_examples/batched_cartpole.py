"""CartPole vectorised with numpy: ``--batched_envs`` copies stepped by one call.

Physics constants, the Euler integrator, the termination thresholds and the reward of +1 per step match
Gymnasium's ``CartPole-v1``; its 500-step ``TimeLimit`` becomes truncation. Each copy is one "agent" of the
multi-agent protocol (``num_agents`` = number of copies, ``is_multiagent=True``), so the batched sampler
(``--batched_sampling=True``) writes a whole step of all copies with single tensor operations instead of a
Python loop per env. Copies whose episode ended are reset on the spot and return their new first observation.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import register_env
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config

ENV_NAME = "batched_cartpole"
DEFAULT_BATCHED_ENVS = 64

# Gymnasium CartPole-v1 constants
GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_CART + MASS_POLE
HALF_POLE_LENGTH = 0.5
POLE_MASS_LENGTH = MASS_POLE * HALF_POLE_LENGTH
FORCE_MAG = 10.0
TAU = 0.02  # seconds between state updates
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4
MAX_EPISODE_STEPS = 500
RESET_NOISE = 0.05

SCREEN_WIDTH, SCREEN_HEIGHT = 600, 400


class BatchedCartPole(gym.Env):
    """``num_envs`` independent CartPoles; observations ``[num_envs, 4]`` float32, actions ``[num_envs]`` in {0, 1}.

    ``observation_space``/``action_space`` describe one copy (one agent), as the multi-agent protocol expects.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(self, num_envs: int = DEFAULT_BATCHED_ENVS, render_mode: str | None = None) -> None:
        if num_envs < 1:
            raise ValueError(f"--batched_envs={num_envs} must be >= 1")
        self.num_agents = num_envs
        self.is_multiagent = True
        self.render_mode = render_mode
        high = np.array(
            [X_THRESHOLD * 2, np.finfo(np.float32).max, THETA_THRESHOLD * 2, np.finfo(np.float32).max], dtype=np.float32
        )
        self.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.state = np.zeros((num_envs, 4), dtype=np.float64)  # x, x_dot, theta, theta_dot
        self.elapsed = np.zeros(num_envs, dtype=np.int64)
        self._rewards = np.ones(num_envs, dtype=np.float32)  # every step of CartPole-v1 is worth +1
        self._infos = [{} for _ in range(num_envs)]  # nothing to report; allocated once, not per step

    def _reset_where(self, mask: np.ndarray) -> None:
        count = int(mask.sum())
        if count:
            self.state[mask] = self.np_random.uniform(-RESET_NOISE, RESET_NOISE, size=(count, 4))
            self.elapsed[mask] = 0

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, list[dict]]:
        super().reset(seed=seed)
        self._reset_where(np.ones(self.num_agents, dtype=bool))
        return self.state.astype(np.float32), self._infos

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Advance every copy; actions may be a list, a numpy array or a (CPU or GPU) torch tensor."""
        self._integrate(self._as_action_array(actions))
        self.elapsed += 1
        x, theta = self.state[:, 0], self.state[:, 2]
        terminated = (np.abs(x) > X_THRESHOLD) | (np.abs(theta) > THETA_THRESHOLD)
        truncated = self.elapsed >= MAX_EPISODE_STEPS  # like TimeLimit: may be set together with terminated
        self._reset_where(terminated | truncated)
        return self.state.astype(np.float32), self._rewards.copy(), terminated, truncated, self._infos

    def _as_action_array(self, actions: Any) -> np.ndarray:
        if hasattr(actions, "detach"):  # torch tensor, possibly on a GPU
            actions = actions.detach().cpu().numpy()
        return np.asarray(actions).reshape(self.num_agents)

    def _integrate(self, actions: np.ndarray) -> None:
        """One Euler step of the cart-pole equations of motion for all copies at once."""
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(actions == 1, FORCE_MAG, -FORCE_MAG)
        cos_theta, sin_theta = np.cos(theta), np.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot**2 * sin_theta) / TOTAL_MASS
        theta_acc = (GRAVITY * sin_theta - cos_theta * temp) / (
            HALF_POLE_LENGTH * (4.0 / 3.0 - MASS_POLE * cos_theta**2 / TOTAL_MASS)
        )
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos_theta / TOTAL_MASS
        self.state = np.stack(
            [x + TAU * x_dot, x_dot + TAU * x_acc, theta + TAU * theta_dot, theta_dot + TAU * theta_acc], axis=1
        )

    def render(self) -> np.ndarray | None:
        """An RGB frame of copy 0 (the others are statistically the same); needs ``render_mode="rgb_array"``."""
        if self.render_mode != "rgb_array":
            return None
        import cv2  # only rendering needs OpenCV

        frame = np.full((SCREEN_HEIGHT, SCREEN_WIDTH, 3), 255, dtype=np.uint8)
        scale = SCREEN_WIDTH / (2 * X_THRESHOLD)
        cart_x, cart_y = int(self.state[0, 0] * scale + SCREEN_WIDTH / 2), int(SCREEN_HEIGHT * 0.6)
        cv2.line(frame, (0, cart_y), (SCREEN_WIDTH, cart_y), (0, 0, 0), 1)
        cv2.rectangle(frame, (cart_x - 25, cart_y - 15), (cart_x + 25, cart_y + 15), (0, 0, 0), -1)
        pole_len = scale * 2 * HALF_POLE_LENGTH
        theta = self.state[0, 2]
        tip = (int(cart_x + pole_len * math.sin(theta)), int(cart_y - pole_len * math.cos(theta)))
        cv2.line(frame, (cart_x, cart_y), tip, (202, 152, 101), 10)
        return frame


def make_batched_cartpole(
    full_env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> BatchedCartPole:
    """The ``make_env_func`` registered as ``batched_cartpole``; the batch size is ``--batched_envs``."""
    del full_env_name, env_config
    num_envs = getattr(cfg, "batched_envs", DEFAULT_BATCHED_ENVS) if cfg is not None else DEFAULT_BATCHED_ENVS
    return BatchedCartPole(num_envs=num_envs, render_mode=render_mode)


def add_batched_cartpole_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Batched CartPole", "The numpy-vectorised CartPole example.")
    group.add_argument(
        "--batched_envs",
        type=int,
        default=DEFAULT_BATCHED_ENVS,
        help="CartPole copies in one env object. More copies amortise Python overhead per step; each copy is one "
        "agent, so a worker holds --num_envs_per_worker x --batched_envs agents.",
    )


def register_batched_cartpole() -> None:
    register_env(ENV_NAME, make_batched_cartpole)
