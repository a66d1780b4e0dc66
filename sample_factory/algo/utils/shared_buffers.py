"""Shared-memory tensors allocated once at start-up: trajectories, who owns which slot, weights.

Layout of one trajectory slot (``T = --rollout``), the contract between the
rollout workers, inference workers and the learner:

- ``obs[key]``        [T+1, *obs_shape]  observation before each step; index T is the one after the last step
- ``rnn_states``      [T+1, rnn_size]    policy state before each step (zeros at an episode start)
- ``actions``         [T, *action_shape] ``log_prob_actions`` [T], ``action_logits`` [T, P], ``values`` [T]
- ``policy_version``  [T]                version of the policy that chose the action
- ``rewards``, ``dones``, ``time_outs`` [T] float32; ``valids`` [T] bool (False for inactive agents)

Every tensor has a leading slot dimension. Processes index slots with integers
that travel in the control messages.

Free slots are not a shared queue. Every slot belongs to one rollout worker
(:class:`SlotOwners`), which keeps its free ones in a private list; whoever is
done with a slot (the batcher, a sampler consumer) sends it back to its owner
with ``on_slots_freed``. That message is also what wakes a worker waiting for
slots, so a worker never polls and never waits for a timeout, and many workers
never contend for one queue.

A policy's published weights (``PolicyWeights``) have their own module, ``policy_weights``; the name is also
importable from here, where it was first defined.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.policy_weights import PolicyWeights
from sample_factory.algo.utils.wiring import rollout_worker_name
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.spaces.layout import obs_space_dict
from sample_factory.model.action_distributions import (
    buffer_actions,
    calc_num_action_parameters,
    get_action_distribution,
)
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import Config

__all__ = [
    "PolicyWeights",
    "SlotOwners",
    "TrajectoryBuffers",
    "action_template",
    "allocate_trajectories",
    "allocate_trajectory_buffers",
    "make_slot_owners",
    "num_actors_total",
    "num_trajectory_slots",
    "numpy_views",
    "trajectories_per_batch",
]


def _torch_dtype(np_dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(1, dtype=np_dtype)).dtype


def action_template(action_space, distribution_name: str | None = None) -> Tensor:
    """One sampled action (batch of 1) from uniform logits: gives the buffer's action shape and dtype (of the
    distribution registered as ``distribution_name``, ``--action_distribution``, when one is)."""
    logits = torch.zeros(1, calc_num_action_parameters(action_space, distribution_name))
    distribution = get_action_distribution(action_space, logits, name=distribution_name)
    return buffer_actions(distribution, distribution.sample())


def num_actors_total(cfg: Config, env_info: EnvInfo) -> int:
    return cfg.num_workers * cfg.num_envs_per_worker * env_info.num_agents


def trajectories_per_batch(cfg: Config) -> int:
    """How many trajectory slots make one training batch of ``batch_size * num_batches_per_epoch`` samples."""
    return (cfg.batch_size * cfg.num_batches_per_epoch) // cfg.rollout


def num_trajectory_slots(cfg: Config, env_info: EnvInfo) -> int:
    """Enough slots that every actor can fill one trajectory while the learners hold what they need.

    Async: each actor fills one slot while its previous one waits to be copied into a
    batch, plus one batch worth per policy for the batcher. Sync, one policy: exactly enough
    for whole training batches, so that sampling stops while the learner trains.

    Sync, several policies: policies are drawn per episode, so their batchers fill at different
    rates, and slots held by partial batches of every policy could leave no worker enough slots
    to finish the batch of any (a stall). Each worker therefore owns room for one partial batch
    of every policy (``num_policies * (per_batch - 1)`` trajectories, which may all be its slots)
    plus one slot per actor of its own; sampling then continues while one learner trains.
    """
    actors = num_actors_total(cfg, env_info)
    per_batch = trajectories_per_batch(cfg)
    if not cfg.async_rl and cfg.num_policies == 1:
        return max(1, math.ceil(per_batch / actors)) * actors
    if not cfg.async_rl:
        per_worker = actors // cfg.num_workers  # slots are dealt to workers in blocks of this size
        blocks = 1 + math.ceil(cfg.num_policies * (per_batch - 1) / per_worker)
        return blocks * actors
    return 2 * actors + per_batch * cfg.num_policies


def allocate_trajectories(cfg: Config, env_info: EnvInfo, num_slots: int, share: bool = True) -> TensorDict:
    T = cfg.rollout
    obs = TensorDict()
    for key, space in obs_space_dict(env_info.obs_space).items():
        obs[key] = torch.zeros((num_slots, T + 1, *space.shape), dtype=_torch_dtype(space.dtype))
    act = action_template(env_info.action_space, cfg.action_distribution)
    num_action_parameters = calc_num_action_parameters(env_info.action_space, cfg.action_distribution)
    traj = TensorDict(
        obs=obs,
        rnn_states=torch.zeros(num_slots, T + 1, get_rnn_size(cfg)),
        actions=torch.zeros((num_slots, T, *act.shape[1:]), dtype=act.dtype),
        log_prob_actions=torch.zeros(num_slots, T),
        action_logits=torch.zeros(num_slots, T, num_action_parameters),
        values=torch.zeros(num_slots, T),
        policy_version=torch.zeros(num_slots, T, dtype=torch.int64),
        rewards=torch.zeros(num_slots, T),
        dones=torch.zeros(num_slots, T),
        time_outs=torch.zeros(num_slots, T),
        valids=torch.zeros(num_slots, T, dtype=torch.bool),
    )
    return traj.share_memory_() if share else traj


class TrajectoryBuffers:
    """The run's trajectory slots: one TensorDict per space group (``policy_spaces``), all indexed by the same slots.

    When every agent has the same spaces (the common case) there is one group and one TensorDict, as there always
    was. Agents with other spaces write into their own group's TensorDict: a slot in use by an actor holds its data
    only in the buffers of that actor's group (a batcher, inference worker or learner reads the buffers of its
    policy's group), so nothing is padded to a common shape. Each group has every slot, which keeps slot ownership
    and the messages that name slots unchanged; the memory cost is one slot set per group.
    """

    def __init__(self, by_group: Sequence[TensorDict], spaces: PolicySpaces) -> None:
        if len(by_group) != spaces.num_groups:
            raise ValueError(f"{len(by_group)} trajectory buffers for {spaces.num_groups} space groups")
        self.by_group = list(by_group)
        self.spaces = spaces

    def of_policy(self, policy_id: int) -> TensorDict:
        """The buffers the actors of ``policy_id`` write into (and its batcher and inference workers read)."""
        return self.by_group[self.spaces.policy_group[policy_id]]

    def numel_bytes(self) -> int:
        return sum(traj.numel_bytes() for traj in self.by_group)


def allocate_trajectory_buffers(
    cfg: Config, spaces: PolicySpaces, num_slots: int, share: bool = True
) -> TrajectoryBuffers:
    """``num_slots`` trajectory slots for every space group of the run."""
    by_group = [
        allocate_trajectories(cfg, spaces.env_info_of_group(group), num_slots, share)
        for group in range(spaces.num_groups)
    ]
    return TrajectoryBuffers(by_group, spaces)


def numpy_views(td: TensorDict) -> dict:
    """Numpy arrays sharing memory with each leaf: cheap scalar writes from the rollout loop."""
    return {k: numpy_views(v) if isinstance(v, dict) else v.numpy() for k, v in td.items()}


class SlotOwners:
    """Which rollout worker owns each trajectory slot, and the message that gives freed slots back.

    Slots are dealt in blocks of one worker's actors (``--num_envs_per_worker`` x agents), round-robin over the
    workers: block ``b`` belongs to worker ``b % num_workers``. A worker's first block is thus the consecutive
    slots ``worker_idx * actors_per_worker ...``, the ones the standalone vector env runners use, and every worker
    owns the same number of whole blocks whenever the slot count allows it. Plain data: pickled to every process.
    """

    def __init__(self, num_slots: int, num_workers: int, actors_per_worker: int) -> None:
        if num_workers < 1 or actors_per_worker < 1:
            raise ValueError(
                f"SlotOwners needs at least one worker and one actor per worker, got num_workers={num_workers}, "
                f"actors_per_worker={actors_per_worker}: check --num_workers and --num_envs_per_worker"
            )
        if num_slots < num_workers * actors_per_worker:
            raise ValueError(
                f"{num_slots} trajectory slots cannot give each of {num_workers} workers its {actors_per_worker} "
                "actors a slot: size them with num_trajectory_slots(cfg, env_info)"
            )
        self.num_slots = num_slots
        self.num_workers = num_workers
        self.actors_per_worker = actors_per_worker

    def owner(self, slot: int) -> int:
        """The rollout worker that owns ``slot``."""
        return (slot // self.actors_per_worker) % self.num_workers

    def initial_free(self, worker_idx: int) -> list[int]:
        """Every slot of ``worker_idx``, ascending: all are free when sampling starts."""
        return [s for s in range(self.num_slots) if self.owner(s) == worker_idx]

    def by_owner(self, slots: Sequence[int]) -> dict[int, list[int]]:
        """``slots`` grouped by owner, each group in the given order."""
        groups: dict[int, list[int]] = {}
        for slot in slots:
            groups.setdefault(self.owner(slot), []).append(slot)
        return groups

    def give_back(self, send: Callable[..., None], slots: Sequence[int]) -> None:
        """Send each owner its ``slots`` (``on_slots_freed``): one small message per owner, which also wakes the
        owner if one of its splits waits for slots. ``send`` is the sending component's ``send``."""
        for worker_idx, owned in self.by_owner(slots).items():
            send(rollout_worker_name(worker_idx), "on_slots_freed", owned)


def make_slot_owners(cfg: Config, env_info: EnvInfo, num_slots: int) -> SlotOwners:
    """The slot ownership of a run with these flags and ``num_slots`` slots."""
    return SlotOwners(num_slots, cfg.num_workers, cfg.num_envs_per_worker * env_info.num_agents)
