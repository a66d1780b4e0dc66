"""Example: plug your own env and your own encoder into Sample Factory.

    python -m sf_examples.train_custom_env_custom_model --env=my_custom_env_v1 --experiment=custom_grid

The env (``my_custom_env_v1``) is a small grid world seen as a 2-channel image: channel 0 marks the agent,
channel 1 the goal. Reaching the goal ends the episode with +1; every other step costs a little, so a policy
that heads straight for the goal scores best. A random policy finds the goal now and then, so learning shows
within a few thousand steps.

The encoder is a small conv net registered through ``global_model_factory()``; the core (RNN) and the
decoder stay the library's. Env and model are defined at module level: worker processes import this module
to unpickle the registry entries.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import gymnasium as gym
import numpy as np
from torch import Tensor, nn

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.model.encoder import Encoder
from sample_factory.model.model_utils import nonlinearity
from sample_factory.train import run_rl
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config, ObsSpace, StatusCode
from sf_examples.cell_rendering import CellRendering

ENV_NAME = "my_custom_env_v1"
# (row, col) offset of each action: up, down, left, right
MOVES = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)], dtype=np.int64)
STEP_PENALTY = 0.01
GOAL_REWARD = 1.0

# Defaults that fit this tiny task; anything passed on the command line still wins.
CUSTOM_ENV_DEFAULTS: dict[str, Any] = {
    "env": ENV_NAME,
    "rollout": 32,
    "batch_size": 512,
    "num_workers": 2,
    "num_envs_per_worker": 4,
    "learning_rate": 3e-4,
    # observations are already 0/1 masks: running mean/std statistics would only add noise early on
    "normalize_input": False,
    # the agent sees the whole grid, a small RNN is plenty (kept on to show recurrent policies work here too)
    "rnn_size": 64,
    "encoder_mlp_layers": [128],
}


class GridGoalEnv(CellRendering, gym.Env):
    """Move the agent (4 actions) to the goal on a ``grid_size`` x ``grid_size`` grid.

    ``episode_len`` truncates episodes that never reach the goal, so the time limit is a truncation (bootstrapped),
    not a termination.
    """

    def __init__(self, grid_size: int = 5, episode_len: int = 50, render_mode: str | None = None) -> None:
        if grid_size < 2:
            raise ValueError(f"--custom_env_grid_size={grid_size} must be >= 2 (agent and goal need separate cells)")
        self.grid_size = grid_size
        self.episode_len = episode_len
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(2, grid_size, grid_size), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(len(MOVES))
        self.agent = np.zeros(2, dtype=np.int64)
        self.goal = np.zeros(2, dtype=np.int64)
        self.num_steps = 0

    def _random_cell(self) -> np.ndarray:
        return self.np_random.integers(0, self.grid_size, size=2)

    def _observation(self) -> np.ndarray:
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        obs[0, self.agent[0], self.agent[1]] = 1.0
        obs[1, self.goal[0], self.goal[1]] = 1.0
        return obs

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.agent = self._random_cell()
        self.goal = self._random_cell()
        while np.array_equal(self.goal, self.agent):
            self.goal = self._random_cell()
        self.num_steps = 0
        self.render_if_human()
        return self._observation(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.agent = np.clip(self.agent + MOVES[int(action)], 0, self.grid_size - 1)
        self.num_steps += 1
        terminated = bool(np.array_equal(self.agent, self.goal))
        truncated = not terminated and self.num_steps >= self.episode_len
        reward = GOAL_REWARD if terminated else -STEP_PENALTY
        info: dict = {}
        if terminated or truncated:
            info["episode_extra_stats"] = {"reached_goal": float(terminated), "steps_taken": float(self.num_steps)}
        self.render_if_human()
        return self._observation(), reward, terminated, truncated, info

    def cell_colors(self) -> np.ndarray:
        """The grid (agent green, goal red) for ``rgb_array`` frames."""
        cells = np.full((self.grid_size, self.grid_size, 3), 40, dtype=np.uint8)
        cells[self.goal[0], self.goal[1]] = (220, 40, 40)
        cells[self.agent[0], self.agent[1]] = (40, 200, 60)
        return cells

    def text_frame(self) -> str:
        rows = [["." for _ in range(self.grid_size)] for _ in range(self.grid_size)]
        rows[self.goal[0]][self.goal[1]] = "G"
        rows[self.agent[0]][self.agent[1]] = "A"
        return "\n".join("".join(row) for row in rows) + "\n"


class CustomEnv(GridGoalEnv):
    """The grid world as an env factory builds it: sizes from the script's flags in ``cfg`` (defaults without).

    ``full_env_name`` is the registered name it was created under, kept for messages and wrappers.
    """

    def __init__(self, full_env_name: str, cfg: Config | None = None, render_mode: str | None = None) -> None:
        grid_size = getattr(cfg, "custom_env_grid_size", 5) if cfg is not None else 5
        episode_len = getattr(cfg, "custom_env_episode_len", 50) if cfg is not None else 50
        super().__init__(grid_size=grid_size, episode_len=episode_len, render_mode=render_mode)
        self.full_env_name = full_env_name


def make_custom_env_func(
    full_env_name: str, cfg: Config | None = None, _env_config: AttrDict | None = None, render_mode: str | None = None
) -> CustomEnv:
    """The ``make_env_func`` registered under ``my_custom_env_v1`` (the per-env config is not needed here)."""
    return CustomEnv(full_env_name, cfg, render_mode=render_mode)


class CustomGridEncoder(Encoder):
    """Two 3x3 convolutions that keep the grid resolution, then a linear layer.

    Padding keeps every cell, which matters on a grid this small: a strided conv net built for 84x84 frames would
    shrink a 5x5 grid to nothing.
    """

    def __init__(self, cfg: Config, obs_space: ObsSpace) -> None:
        super().__init__(cfg)
        channels, height, width = obs_space["obs"].shape
        self.conv_head = nn.Sequential(
            nn.Conv2d(channels, 16, kernel_size=3, padding=1),
            nonlinearity(cfg),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nonlinearity(cfg),
        )
        self.out_size = cfg.encoder_mlp_layers[-1] if cfg.encoder_mlp_layers else 128
        self.mlp = nn.Sequential(nn.Linear(32 * height * width, self.out_size), nonlinearity(cfg))

    def forward(self, obs_dict: dict[str, Tensor]) -> Tensor:
        x = self.conv_head(obs_dict["obs"].float())  # [B, 32, H, W]
        return self.mlp(x.flatten(1))  # [B, out_size]

    def get_out_size(self) -> int:
        return self.out_size


# Sample Factory 2's name for this example's encoder
CustomEncoder = CustomGridEncoder


def make_custom_encoder(cfg: Config, obs_space: ObsSpace) -> Encoder:
    """Encoder factory for ``global_model_factory().register_encoder_factory``."""
    return CustomGridEncoder(cfg, obs_space)


def add_custom_env_args(parser: argparse.ArgumentParser) -> None:
    """Flags of this example only; they are saved in config.json like any other flag, so enjoy sees them."""
    group = parser.add_argument_group("Custom env", "Flags of the my_custom_env_v1 example.")
    group.add_argument("--custom_env_episode_len", type=int, default=50, help="Steps before an episode is truncated.")
    group.add_argument(
        "--custom_env_grid_size", type=int, default=5, help="Side of the square grid; larger is harder to explore."
    )


def custom_env_override_defaults(parser: argparse.ArgumentParser) -> None:
    """Library defaults are tuned for Atari-scale tasks; this tiny grid needs smaller, faster settings."""
    parser.set_defaults(**CUSTOM_ENV_DEFAULTS)


# Sample Factory 2's names for this example's flags and defaults
add_extra_params = add_custom_env_args
override_default_params = custom_env_override_defaults


def parse_custom_args(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, then this example's flags and defaults, then the strict final parse."""
    parser, _ = parse_sf_args(argv=argv, evaluation=evaluation)
    add_custom_env_args(parser)
    custom_env_override_defaults(parser)
    if evaluation:
        parser.set_defaults(train_script="sf_examples.train_custom_env_custom_model")
    return parse_full_cfg(parser, argv)


def register_custom_components() -> None:
    """Register the env and the encoder; must run before training or enjoy creates envs or models."""
    register_env(ENV_NAME, make_custom_env_func)
    global_model_factory().register_encoder_factory(make_custom_encoder)


def main() -> StatusCode:
    register_custom_components()
    cfg = parse_custom_args()
    return run_rl(cfg)


if __name__ == "__main__":
    sys.exit(main())
