"""The env runner of a multi-agent env whose agents have different observation or action spaces.

Each actor writes into the trajectory buffers of its agent's space group (``algo.utils.policy_spaces``), with the
observation keys and action conversion of its own spaces; nothing is padded to a common shape. Rewards, dones,
time-outs and validity have the same shape in every group and are written into all of them (a slot holds data only
in its actor's group, the same slot of the other groups is unused meanwhile), so only observations and actions are
routed per actor. Batched sampling stacks all actors into one array and is refused for such envs
(``PolicySpaces``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sample_factory.algo.sampling.actor_buffers import actor_parts
from sample_factory.algo.sampling.env_runner import EpisodeStats, NonBatchedEnvRunner
from sample_factory.envs.action_conversion import make_action_converter
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.spaces.layout import obs_space_dict
from sample_factory.utils.typing import Config


class MixedSpacesEnvRunner(NonBatchedEnvRunner):
    """A :class:`NonBatchedEnvRunner` whose actors write into the buffers of their space group (``trajs_np``: numpy
    views of each group's trajectory buffers; ``agent_group``: the group of each agent index)."""

    def __init__(
        self, cfg: Config, env_info: EnvInfo, envs: list, trajs_np: Sequence[dict], agent_group: Sequence[int]
    ) -> None:
        super().__init__(cfg, env_info, envs, trajs_np[0], EpisodeStats(0))
        self.trajs = list(trajs_np)
        self.parts = actor_parts(list(agent_group), self.num_agents, self.state.num_actors)
        self.actor_group = np.empty(self.state.num_actors, dtype=np.int64)
        for group, actors in self.parts:
            self.actor_group[actors] = group
        self.converters, self.obs_layout = {}, {}
        for group in range(len(self.trajs)):
            obs_space, action_space = env_info.agent_spaces(list(agent_group).index(group))
            self.converters[group] = make_action_converter(action_space)
            plain = not isinstance(getattr(obs_space, "spaces", None), dict)
            self.obs_layout[group] = (list(obs_space_dict(obs_space)), plain)

    def _write_obs(self, actor: int, obs, t: int) -> None:
        group = self.actor_group[actor]
        target, slot = self.trajs[group]["obs"], self.state.slots[actor]
        keys, plain = self.obs_layout[group]
        if plain:
            target["obs"][slot, t] = obs
        else:
            for key in keys:
                target[key][slot, t] = obs[key]

    def _env_actions(self, t: int) -> list:
        actions: list = [None] * self.state.num_actors
        slots = self.state.slots
        for group, actors in self.parts:
            rows, convert = self.trajs[group]["actions"][slots[actors], t], self.converters[group]
            for row, actor in zip(rows, actors, strict=True):
                actions[actor] = convert(row)
        return actions

    def _write_step(self, traj: dict, t: int) -> None:
        for group_traj in self.trajs:
            super()._write_step(group_traj, t)
