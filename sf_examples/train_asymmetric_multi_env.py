"""Example: a multi-agent env whose agents have different observation and action spaces, one policy for each.

    python -m sf_examples.train_asymmetric_multi_env --experiment=pursuit
    python -m sf_examples.enjoy_asymmetric_multi_env --experiment=pursuit

``pursuit_evasion_v1`` has two agents on a square field ``[-1, 1]^2``:

- agent 0, the **pursuer**, moves with a continuous velocity (``Box(-1, 1, (2,))``, scaled to at most
  ``PURSUER_SPEED`` per step) and sees 4 numbers: its position and the evader's. Each step it is rewarded
  ``-0.1 x`` its distance to the evader, so its episode reward rises as it learns to chase.
- agent 1, the **evader**, moves in one of five directions (``Discrete(5)``: stay, up, down, left, right, by
  ``EVADER_STEP``) and sees 6 numbers: its position, its goal's and the pursuer's. Each step it is rewarded
  ``-0.1 x`` its distance to its goal (drawn anew every episode), and ``-TAG_PENALTY`` more while the pursuer is
  within ``TAG_RADIUS``; its episode reward rises as it learns to walk to its goal.

Episodes last ``--pursuit_episode_len`` steps. Random play scores about -5 for each agent; docs/multi_agent.md has
the figures of a training run. The env declares its per-agent spaces as ``observation_spaces`` and
``action_spaces`` (one per agent index); the trainer gives each kind of agent a policy of its own
(``--num_policies=2``: policy 0 acts for the pursuer, policy 1 for the evader), each with its own model, buffers and
learner.
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
from sf_examples.entry_points import FamilyFlags, train_family

ENV_NAME = "pursuit_evasion_v1"
PURSUER, EVADER = 0, 1
PURSUER_SPEED = 0.1
EVADER_STEP = 0.08
EVADER_MOVES = np.array([(0.0, 0.0), (0.0, 1.0), (0.0, -1.0), (-1.0, 0.0), (1.0, 0.0)], dtype=np.float32)
DISTANCE_WEIGHT = 0.1
TAG_RADIUS = 0.15
TAG_PENALTY = 0.05

ASYMMETRIC_DEFAULTS: dict[str, Any] = {
    "env": ENV_NAME,
    "num_policies": 2,  # one per kind of agent
    "rollout": 32,
    "batch_size": 1024,
    "num_workers": 2,
    "num_envs_per_worker": 8,
    "learning_rate": 3e-4,
    "use_rnn": False,  # the current observation is all an agent needs
    "encoder_mlp_layers": [64, 64],
    "train_for_env_steps": 1_000_000,
}


class PursuitEvasionEnv(gym.Env):
    """A pursuer (continuous actions, 4 observations) and an evader (discrete actions, 6 observations)."""

    num_agents = 2
    is_multiagent = True
    metadata = {"render_modes": ["human", "ansi"]}

    def __init__(self, episode_len: int = 50, render_mode: str | None = None) -> None:
        self.episode_len = episode_len
        self.render_mode = render_mode
        # one space per agent index: what Sample Factory reads to give each kind of agent its own policy
        self.observation_spaces = [
            gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32),
            gym.spaces.Box(-1.0, 1.0, shape=(6,), dtype=np.float32),
        ]
        self.action_spaces = [gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32), gym.spaces.Discrete(5)]
        # agent 0's, for code that expects one space
        self.observation_space, self.action_space = self.observation_spaces[0], self.action_spaces[0]
        self.positions = np.zeros((2, 2), dtype=np.float32)
        self.goal = np.zeros(2, dtype=np.float32)
        self.steps = 0
        self.tagged_steps = 0

    def _observations(self) -> list[np.ndarray]:
        pursuer, evader = self.positions
        return [np.concatenate([pursuer, evader]), np.concatenate([evader, self.goal, pursuer])]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[list[np.ndarray], list[dict]]:
        super().reset(seed=seed)
        self.positions = self.np_random.uniform(-1.0, 1.0, size=(2, 2)).astype(np.float32)
        self.goal = self.np_random.uniform(-1.0, 1.0, size=2).astype(np.float32)
        self.steps = 0
        self.tagged_steps = 0
        return self._observations(), [{}, {}]

    def step(self, actions: Sequence[Any]) -> tuple[list[np.ndarray], list[float], list[bool], list[bool], list[dict]]:
        velocity = np.clip(np.asarray(actions[PURSUER], dtype=np.float32).reshape(2), -1.0, 1.0)
        self.positions[PURSUER] += PURSUER_SPEED * velocity
        self.positions[EVADER] += EVADER_STEP * EVADER_MOVES[int(np.asarray(actions[EVADER]).reshape(-1)[0])]
        np.clip(self.positions, -1.0, 1.0, out=self.positions)
        self.steps += 1
        chase = float(np.linalg.norm(self.positions[PURSUER] - self.positions[EVADER]))
        tagged = chase < TAG_RADIUS
        self.tagged_steps += int(tagged)
        to_goal = float(np.linalg.norm(self.positions[EVADER] - self.goal))
        rewards = [-DISTANCE_WEIGHT * chase, -DISTANCE_WEIGHT * to_goal - TAG_PENALTY * float(tagged)]
        done = self.steps >= self.episode_len
        infos = [self._info(done, chase), self._info(done, to_goal)]
        obs = self._observations()
        if done:  # both agents' episodes end together: the next episode starts here (auto-reset)
            obs, _ = self.reset()
        return obs, rewards, [False, False], [done, done], infos

    def _info(self, done: bool, final_distance: float) -> dict:
        if not done:
            return {}
        return {"episode_extra_stats": {"final_distance": final_distance, "tagged_steps": float(self.tagged_steps)}}

    def render(self) -> str | None:
        text = (
            f"step {self.steps:3d}  pursuer {np.round(self.positions[PURSUER], 2)}  "
            f"evader {np.round(self.positions[EVADER], 2)}  goal {np.round(self.goal, 2)}"
        )
        if self.render_mode == "human":
            print(text)
            return None
        return text


def make_pursuit_env(
    full_env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> PursuitEvasionEnv:
    """The ``make_env_func`` of ``pursuit_evasion_v1``; a config without the example's flag keeps the default."""
    del full_env_name, env_config
    episode_len = getattr(cfg, "pursuit_episode_len", 50)
    return PursuitEvasionEnv(episode_len=episode_len, render_mode=render_mode)


def add_pursuit_args(parser: argparse.ArgumentParser) -> None:
    """Flags of this example; saved in config.json, so enjoy recreates the same env."""
    group = parser.add_argument_group("Pursuit-evasion env", "Flags of the pursuit_evasion_v1 example.")
    group.add_argument("--pursuit_episode_len", type=int, default=50, help="Steps of one episode.")


PURSUIT_FLAGS = FamilyFlags(
    add_pursuit_args,
    lambda parser: parser.set_defaults(**ASYMMETRIC_DEFAULTS),
    train_script="sf_examples.train_asymmetric_multi_env",
    enjoy_script="sf_examples.enjoy_asymmetric_multi_env",
)
# parse_pursuit_args(argv=None, evaluation=False) -> cfg: standard flags, this example's flags and defaults
parse_pursuit_args = PURSUIT_FLAGS.parse


def register_pursuit_components() -> None:
    register_env(ENV_NAME, make_pursuit_env)


def main() -> StatusCode:
    return train_family(register_pursuit_components, parse_pursuit_args)


if __name__ == "__main__":
    sys.exit(main())
