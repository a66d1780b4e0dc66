"""Example: a custom multi-agent env.

    python -m sf_examples.train_custom_multi_env --env=my_custom_multi_env_v1 --experiment=custom_multi

``my_custom_multi_env_v1`` puts two agents on one line of cells. Each agent has its own goal cell; reaching it
gives +1 and ends that agent's episode, every other step costs a little, and both agents standing on the same
cell costs each of them extra, so they must learn to pass each other. Each agent sees its own position, its
goal and the other agent's position (one-hot vectors).

It shows the multi-agent protocol: ``num_agents`` and ``is_multiagent=True``, a list of actions in, lists of
observations, rewards, terminated/truncated flags and infos out; an agent whose episode ended is reset on
its own (auto-reset) and the observation returned for it is the first one of its next episode. Finished
episodes report ``info["episode_extra_stats"]``, which training averages into TensorBoard. Run it with
``--num_policies=2`` to train two policies that are assigned to the agents at random each episode.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import register_env
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config, StatusCode
from sf_examples.cell_rendering import CellRendering
from sf_examples.entry_points import FamilyFlags, train_family

ENV_NAME = "my_custom_multi_env_v1"
NUM_AGENTS = 2
MOVES = (-1, 0, 1)  # action -> position change: left, stay, right
STEP_PENALTY = 0.01
COLLISION_PENALTY = 0.1
GOAL_REWARD = 1.0

MULTI_ENV_DEFAULTS: dict[str, Any] = {
    "env": ENV_NAME,
    "rollout": 32,
    "batch_size": 512,
    "num_workers": 2,
    "num_envs_per_worker": 4,
    "learning_rate": 3e-4,
    # one-hot inputs need no running normalisation
    "normalize_input": False,
    # everything the agent needs is in the current observation: a feed-forward policy learns fastest
    "use_rnn": False,
    "encoder_mlp_layers": [64, 64],
}


def multi_env_override_defaults(parser: argparse.ArgumentParser) -> None:
    """Small, fast settings for a tiny vector-observation task."""
    parser.set_defaults(**MULTI_ENV_DEFAULTS)


class LineGoalsMultiEnv(CellRendering, gym.Env):
    """Two agents on ``num_cells`` cells, each walking to its own goal; agents reset independently."""

    # the multi-agent protocol: Sample Factory reads these two to step the env as NUM_AGENTS agents
    num_agents = NUM_AGENTS
    is_multiagent = True
    # every agent's action space (the same for any line length)
    action_space = gym.spaces.Discrete(len(MOVES))

    def __init__(self, num_cells: int = 7, episode_len: int = 30, render_mode: str | None = None) -> None:
        if num_cells < 3:
            raise ValueError(f"--custom_multi_env_num_cells={num_cells} must be >= 3")
        self.num_cells = num_cells
        self.episode_len = episode_len
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(3 * num_cells,), dtype=np.float32)
        self.positions = np.zeros(NUM_AGENTS, dtype=np.int64)
        self.goals = np.zeros(NUM_AGENTS, dtype=np.int64)
        self.steps = np.zeros(NUM_AGENTS, dtype=np.int64)
        self.collisions = np.zeros(NUM_AGENTS, dtype=np.int64)

    def _reset_agent(self, agent: int) -> None:
        self.positions[agent] = self.np_random.integers(self.num_cells)
        goal = self.np_random.integers(self.num_cells - 1)
        self.goals[agent] = goal + (goal >= self.positions[agent])  # any cell except the start
        self.steps[agent] = 0
        self.collisions[agent] = 0

    def _observation(self, agent: int) -> np.ndarray:
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        other = self.positions[1 - agent]
        obs[self.positions[agent]] = 1.0
        obs[self.num_cells + self.goals[agent]] = 1.0
        obs[2 * self.num_cells + other] = 1.0
        return obs

    def _observations(self) -> list[np.ndarray]:
        return [self._observation(agent) for agent in range(self.num_agents)]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[list[np.ndarray], list[dict]]:
        super().reset(seed=seed)
        for agent in range(self.num_agents):
            self._reset_agent(agent)
        self.render_if_human()
        return self._observations(), [{} for _ in range(self.num_agents)]

    def step(self, actions: Sequence[int]) -> tuple[list[np.ndarray], list[float], list[bool], list[bool], list[dict]]:
        """Move both agents, score them, then reset every agent whose episode just ended."""
        moves = np.array([MOVES[int(a)] for a in np.asarray(actions).reshape(self.num_agents)])
        self.positions = np.clip(self.positions + moves, 0, self.num_cells - 1)
        self.steps += 1
        collided = self.positions[0] == self.positions[1]
        terminated = [bool(self.positions[a] == self.goals[a]) for a in range(self.num_agents)]
        truncated = [not terminated[a] and bool(self.steps[a] >= self.episode_len) for a in range(self.num_agents)]
        rewards, infos = [], []
        for agent in range(self.num_agents):
            self.collisions[agent] += int(collided)
            reward = GOAL_REWARD if terminated[agent] else -STEP_PENALTY
            rewards.append(reward - COLLISION_PENALTY * float(collided))
            infos.append(self._end_of_episode_info(agent, terminated[agent], truncated[agent]))
        self._auto_reset(terminated, truncated)
        self.render_if_human()
        return self._observations(), rewards, terminated, truncated, infos

    def _end_of_episode_info(self, agent: int, terminated: bool, truncated: bool) -> dict:
        if not (terminated or truncated):
            return {}
        extra = {"reached_goal": float(terminated), "collisions": float(self.collisions[agent])}
        return {"episode_extra_stats": extra}

    def _auto_reset(self, terminated: list[bool], truncated: list[bool]) -> None:
        # reset after scoring: the step's rewards and infos belong to the episode that just ended
        for agent in range(self.num_agents):
            if terminated[agent] or truncated[agent]:
                self._reset_agent(agent)

    def cell_colors(self) -> np.ndarray:
        """One row of cells per agent (agent bright, goal dim) for ``rgb_array`` frames."""
        colors = np.array([(40, 200, 60), (60, 120, 230)], dtype=np.uint8)
        cells = np.full((self.num_agents, self.num_cells, 3), 30, dtype=np.uint8)
        for agent in range(self.num_agents):
            cells[agent, self.goals[agent]] = colors[agent] // 3
            cells[agent, self.positions[agent]] = colors[agent]
        return cells

    def text_frame(self) -> str:
        lines = []
        for agent in range(self.num_agents):
            row = ["." for _ in range(self.num_cells)]
            row[self.goals[agent]] = "g"
            row[self.positions[agent]] = str(agent)
            lines.append("".join(row))
        return "\n".join(lines) + "\n"


# LineGoalsMultiEnv's size arguments and the flags that set them
SIZE_FLAGS = {"num_cells": "custom_multi_env_num_cells", "episode_len": "custom_env_episode_len"}


class CustomMultiEnv(LineGoalsMultiEnv):
    """The two-agent line as an env factory builds it: sizes from the example's flags in ``cfg``; a config without
    them (none, or one saved by a script that lacks these flags) keeps the env's defaults."""

    def __init__(self, full_env_name: str, cfg: Config | None = None, render_mode: str | None = None) -> None:
        sizes = {arg: getattr(cfg, flag) for arg, flag in SIZE_FLAGS.items() if hasattr(cfg, flag)}
        super().__init__(**sizes, render_mode=render_mode)
        self.full_env_name = full_env_name


def make_custom_multi_env_func(
    full_env_name: str, cfg: Config | None = None, _env_config: AttrDict | None = None, render_mode: str | None = None
) -> CustomMultiEnv:
    """The ``make_env_func`` registered under ``my_custom_multi_env_v1`` (the per-env config is not needed here)."""
    return CustomMultiEnv(full_env_name, cfg, render_mode=render_mode)


def add_multi_env_args(parser: argparse.ArgumentParser) -> None:
    """Flags of this example; saved in config.json, so enjoy recreates the same env."""
    group = parser.add_argument_group("Custom multi-agent env", "Flags of the my_custom_multi_env_v1 example.")
    group.add_argument("--custom_env_episode_len", type=int, default=30, help="Steps before an episode is truncated.")
    group.add_argument("--custom_multi_env_num_cells", type=int, default=7, help="Cells on the line (at least 3).")


# Sample Factory 2's name for this example's flags
add_extra_params_func = add_multi_env_args

MULTI_ENV_FLAGS = FamilyFlags(
    add_multi_env_args, multi_env_override_defaults, train_script="sf_examples.train_custom_multi_env"
)


def parse_multi_env_args(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, then this example's flags and defaults, then the strict final parse (the steps are spelled
    out in ``sf_examples/train_custom_env_custom_model.py``)."""
    return MULTI_ENV_FLAGS.parse(argv, evaluation)


def register_multi_env_components() -> None:
    """Register the env; the default model suits its vector observations."""
    register_env(ENV_NAME, make_custom_multi_env_func)


# Sample Factory 2's names for this example's parser and registration, used by its tests and user scripts
parse_custom_args = parse_multi_env_args
register_custom_components = register_multi_env_components


def main() -> StatusCode:
    return train_family(register_multi_env_components, parse_multi_env_args)


if __name__ == "__main__":
    sys.exit(main())
