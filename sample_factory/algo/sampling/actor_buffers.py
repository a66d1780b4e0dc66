"""Where a rollout worker's actors keep their trajectories: the buffers of each actor's space group.

Every actor (one agent of one env) belongs to the space group of its agent index (``algo.utils.policy_spaces``), for
the whole run. Its observations, actions and RNN states live in that group's trajectory buffers; a split of envs
therefore has one *part* per group, the actors of that group. When every agent has the same spaces there is one
part covering the whole split (a ``slice(None)``), and each operation below is the one tensor operation it always
was.

The carry-over of a split (the last observation and RNN state of a finished rollout, step 0 of the next one) is a
list with one ``{"obs": {key: tensor}, "rnn_states": tensor}`` per part.
"""

from __future__ import annotations

import numpy as np
import torch

from sample_factory.algo.utils.shared_buffers import TrajectoryBuffers

# the actors of one space group within a split: (group, their indices in the split)
Part = tuple[int, "slice | np.ndarray"]


class ActorBuffers:
    """The trajectory buffers of a rollout worker's actors, by space group."""

    def __init__(self, buffers: TrajectoryBuffers, num_agents: int) -> None:
        self.by_group = buffers.by_group
        self.agent_group = buffers.spaces.agent_group
        self.num_agents = num_agents

    def split_parts(self, num_actors: int) -> list[Part]:
        """The parts of a split of ``num_actors`` actors (agents of consecutive envs)."""
        if len(self.by_group) == 1:
            return [(0, slice(None))]
        return actor_parts(self.agent_group, self.num_agents, num_actors)

    def allocate_carry(self, parts: list[Part], num_actors: int) -> list[dict]:
        """Staging for the last observation and RNN state of a finished rollout, one entry per part."""
        carry = []
        for group, actors in parts:
            traj = self.by_group[group]
            n = num_actors if isinstance(actors, slice) else len(actors)
            obs = {k: torch.zeros((n, *v.shape[2:]), dtype=v.dtype) for k, v in traj["obs"].items()}
            carry.append({"obs": obs, "rnn_states": torch.zeros(n, traj["rnn_states"].shape[-1])})
        return carry

    def stage_carry_over(self, parts: list[Part], carry: list[dict], old_slots: np.ndarray, last: int) -> None:
        """Copy out step ``last`` (the observation after the final step, and its RNN state) of the finished slots,
        before a batcher may recycle them."""
        for (group, actors), staged in zip(parts, carry, strict=True):
            traj, old = self.by_group[group], _index(old_slots, actors)
            for key, tensor in traj["obs"].items():
                torch.index_select(tensor[:, last], 0, old, out=staged["obs"][key])
            torch.index_select(traj["rnn_states"][:, last], 0, old, out=staged["rnn_states"])

    def begin_rollout(self, parts: list[Part], carry: list[dict], new_slots: np.ndarray) -> None:
        """Step 0 of the new slots continues where the finished rollout stopped."""
        for (group, actors), staged in zip(parts, carry, strict=True):
            traj, new = self.by_group[group], _index(new_slots, actors)
            for key, tensor in traj["obs"].items():
                tensor[new, 0] = staged["obs"][key]
            traj["rnn_states"][new, 0] = staged["rnn_states"]

    def zero_rnn_states(self, slots: np.ndarray, t: int) -> None:
        """Episode starts: zero the RNN state at step ``t`` of ``slots``. Written into every group's buffers: a slot
        holds data only in its actor's group, and the same slot of other groups is unused meanwhile."""
        if len(slots):
            index = torch.from_numpy(np.ascontiguousarray(slots))
            for traj in self.by_group:
                traj["rnn_states"][index, t] = 0.0


def actor_parts(agent_group: list[int], num_agents: int, num_actors: int) -> list[tuple[int, np.ndarray]]:
    """``(group, actor indices)`` of every space group among ``num_actors`` actors (agents of consecutive envs of
    ``num_agents`` agents each)."""
    groups = np.array([agent_group[actor % num_agents] for actor in range(num_actors)])
    return [(int(g), np.flatnonzero(groups == g)) for g in np.unique(groups)]


def _index(slots: np.ndarray, actors: slice | np.ndarray) -> torch.Tensor:
    return torch.from_numpy(slots if isinstance(actors, slice) else np.ascontiguousarray(slots[actors]))
