"""``predator_prey_v0``: a PettingZoo parallel env whose two agents have different spaces (written for the examples).

A ``predator_0`` with a continuous velocity (``Box(-1, 1, (2,))``) seeing 4 numbers (its position and the prey's)
chases a ``prey_0`` that moves in five discrete directions (``Discrete(5)``) and sees 6 numbers (its position, its
goal's and the predator's). The dynamics and rewards are those of ``sf_examples.train_asymmetric_multi_env``: the
predator is rewarded for staying close to the prey, the prey for reaching its goal (and penalised while the predator
is within reach). It follows PettingZoo's ``ParallelEnv`` API (dicts keyed by agent name, ``observation_space(agent)``
and ``action_space(agent)``), so it trains through the PettingZoo family like any other PettingZoo env:

    python -m sf_examples.train_pettingzoo_env --env=predator_prey_v0 --experiment=predator_prey

Agents of different spaces need a policy each: the family's defaults for this env set ``--num_policies=2``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from pettingzoo import ParallelEnv

from sf_examples.train_asymmetric_multi_env import PursuitEvasionEnv

AGENTS = ("predator_0", "prey_0")


class PredatorPreyParallelEnv(ParallelEnv):
    """The pursuit-evasion game with PettingZoo's parallel API; both agents' episodes end after ``max_cycles``."""

    metadata = {"name": "predator_prey_v0", "render_modes": ["human", "ansi"], "is_parallelizable": True}

    def __init__(self, max_cycles: int = 50, render_mode: str | None = None) -> None:
        self.game = PursuitEvasionEnv(episode_len=max_cycles, render_mode=render_mode)
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self.render_mode = render_mode
        self._observation_spaces = dict(zip(AGENTS, self.game.observation_spaces, strict=True))
        self._action_spaces = dict(zip(AGENTS, self.game.action_spaces, strict=True))

    def observation_space(self, agent: str) -> gym.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> gym.Space:
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, _ = self.game.reset(seed=seed)
        self.agents = list(AGENTS)
        return dict(zip(AGENTS, obs, strict=True)), {agent: {} for agent in AGENTS}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terminated, truncated, infos = self.game.step([actions[agent] for agent in AGENTS])
        by_agent = [dict(zip(AGENTS, values, strict=True)) for values in (obs, rewards, terminated, truncated, infos)]
        if any(truncated):
            self.agents = []  # the episode is over for both (the game has already started its next one)
        return tuple(by_agent)  # type: ignore[return-value]

    def render(self) -> str | None:
        return self.game.render()

    def close(self) -> None:
        self.game.close()


def parallel_env(max_cycles: int = 50, render_mode: str | None = None) -> PredatorPreyParallelEnv:
    """PettingZoo's constructor convention (``<module>.parallel_env(...)``)."""
    return PredatorPreyParallelEnv(max_cycles=max_cycles, render_mode=render_mode)
