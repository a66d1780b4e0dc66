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

Sample Factory 2's allocation helpers are here too (``init_tensor``, ``alloc_trajectory_tensors``,
``alloc_policy_output_tensors``, ``BufferMgr``); ``alloc_trajectory_tensors`` is what the run's own slots are
allocated with, so its layout is the one above.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.policy_weights import PolicyWeights
from sample_factory.algo.utils.rl_utils import total_num_agents, trajectories_per_training_iteration
from sample_factory.algo.utils.torch_utils import to_torch_dtype
from sample_factory.algo.utils.wiring import rollout_worker_name
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.spaces.layout import obs_space_dict
from sample_factory.model.action_distributions import (
    buffer_actions,
    calc_num_action_parameters,
    calc_num_actions,
    get_action_distribution,
)
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.gpu_utils import policy_device
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import Config

__all__ = [
    "BufferMgr",
    "PolicyWeights",
    "SlotOwners",
    "TrajectoryBuffers",
    "action_info",
    "action_template",
    "alloc_policy_output_tensors",
    "alloc_trajectory_tensors",
    "allocate_trajectories",
    "allocate_trajectory_buffers",
    "init_tensor",
    "make_slot_owners",
    "num_actors_total",
    "num_trajectory_slots",
    "numpy_views",
    "policy_device",
    "policy_output_shapes",
    "trajectories_per_batch",
]


def action_template(action_space, distribution_name: str | None = None) -> Tensor:
    """One sampled action (batch of 1) from uniform logits: gives the buffer's action shape and dtype (of the
    distribution registered as ``distribution_name``, ``--action_distribution``, when one is)."""
    logits = torch.zeros(1, calc_num_action_parameters(action_space, distribution_name))
    distribution = get_action_distribution(action_space, logits, name=distribution_name)
    return buffer_actions(distribution, distribution.sample())


def num_actors_total(cfg: Config, env_info: EnvInfo) -> int:
    """Actors of the whole run (``rl_utils.total_num_agents``)."""
    return total_num_agents(cfg, env_info)


def trajectories_per_batch(cfg: Config) -> int:
    """How many trajectory slots make one training batch of ``batch_size * num_batches_per_epoch`` samples."""
    return trajectories_per_training_iteration(cfg)


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
    """``num_slots`` trajectory slots of ``--rollout`` steps for this env and these flags, in host memory."""
    return alloc_trajectory_tensors(
        env_info, num_slots, cfg.rollout, get_rnn_size(cfg), "cpu", share, distribution_name=cfg.action_distribution
    )


def init_tensor(
    leading_dimensions: int | Sequence[int],
    tensor_type: torch.dtype | np.dtype | type,
    tensor_shape: Sequence[int],
    device: torch.device | str = "cpu",
    share: bool = False,
) -> Tensor:
    """A zeroed tensor ``[*leading_dimensions, *tensor_shape]`` of ``tensor_type`` (a torch or numpy dtype) on
    ``device``, moved to shared memory when ``share`` (so processes started later see the same storage).

    Zero-sized entries of ``tensor_shape`` are dropped, so the shape ``(0,)`` of a scalar spec adds no dimension.
    """
    leading = [leading_dimensions] if isinstance(leading_dimensions, int) else list(leading_dimensions)
    dtype = tensor_type if isinstance(tensor_type, torch.dtype) else to_torch_dtype(tensor_type)
    tensor = torch.zeros([*leading, *(size for size in tensor_shape if size)], dtype=dtype, device=device)
    return tensor.share_memory_() if share else tensor


def alloc_trajectory_tensors(
    env_info: EnvInfo,
    num_traj: int,
    rollout: int,
    rnn_size: int,
    device: torch.device | str = "cpu",
    share: bool = True,
    distribution_name: str | None = None,
) -> TensorDict:
    """``num_traj`` trajectories of ``rollout`` steps in the layout of the module docstring.

    ``distribution_name`` is a distribution registered by name (``--action_distribution``), which may store actions
    in its own shape; None for the env's own action space.
    """
    T = rollout

    def zeros(tail: Sequence[int], dtype: torch.dtype = torch.float32) -> Tensor:
        return torch.zeros((num_traj, *tail), dtype=dtype, device=device)  # every dimension kept, zero-sized too

    obs_spaces = obs_space_dict(env_info.obs_space)
    obs = TensorDict({key: zeros((T + 1, *s.shape), to_torch_dtype(s.dtype)) for key, s in obs_spaces.items()})
    act = action_template(env_info.action_space, distribution_name)
    traj = TensorDict(
        obs=obs,
        rnn_states=zeros((T + 1, rnn_size)),
        actions=zeros((T, *act.shape[1:]), act.dtype),
        log_prob_actions=zeros((T,)),
        action_logits=zeros((T, calc_num_action_parameters(env_info.action_space, distribution_name))),
        values=zeros((T,)),
        policy_version=zeros((T,), torch.int64),
        rewards=zeros((T,)),
        dones=zeros((T,)),
        time_outs=zeros((T,)),
        valids=zeros((T,), torch.bool),
    )
    return traj.share_memory_() if share else traj


def action_info(env_info: EnvInfo) -> tuple[int, int]:
    """``(num_actions, num_action_distribution_parameters)``: the width of a stored action row and of the policy
    head's raw output for the env's action space."""
    return calc_num_actions(env_info.action_space), calc_num_action_parameters(env_info.action_space)


def policy_output_shapes(num_actions: int, num_action_distribution_parameters: int) -> list[tuple[str, list[int]]]:
    """What the policy gives per actor and step, as ``(name, per-actor shape)``; ``[]`` is a scalar.

    The action row is ``[num_actions]`` here; the trajectory buffers keep a ``Discrete`` action as one number.
    """
    return [
        ("actions", [num_actions]),
        ("action_logits", [num_action_distribution_parameters]),
        ("log_prob_actions", []),
        ("values", []),
        ("policy_version", []),
    ]


def alloc_policy_output_tensors(
    cfg: Config, env_info: EnvInfo, rnn_size: int, device: torch.device | str = "cpu", share: bool = True
) -> TensorDict:
    """One step of policy outputs for every actor of the run, plus its next RNN state (``new_rnn_states``).

    Leading dimensions ``[num_workers, worker_num_splits, actors per split]``: the actors a rollout worker steps in
    one split side by side. ``actions`` have the dtype of a sampled action (int64 when every action is discrete),
    ``policy_version`` int64, the rest float32.
    """
    actors_per_split = cfg.num_envs_per_worker // cfg.worker_num_splits * env_info.num_agents
    leading = [cfg.num_workers, cfg.worker_num_splits, actors_per_split]
    action_dtype = action_template(env_info.action_space, cfg.action_distribution).dtype
    dtypes = {"actions": action_dtype, "policy_version": torch.int64}
    outputs = [*policy_output_shapes(*action_info(env_info)), ("new_rnn_states", [rnn_size])]
    return TensorDict(
        {name: init_tensor(leading, dtypes.get(name, torch.float32), shape, device, share) for name, shape in outputs}
    )


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


class BufferMgr:
    """The run's shared buffers for ``cfg`` and ``env_info``, allocated at construction (Sample Factory 2's name).

    What the runner allocates at start-up, for scripts that drive the components themselves:

    - ``traj_buffers``: every trajectory slot (:class:`TrajectoryBuffers`, one TensorDict per space group);
      ``traj_tensors_torch`` maps the device they live on (host memory) to the slots of space group 0;
    - ``slot_owners``: which rollout worker hands out which slot (in place of Sample Factory 2's free-slot queues);
    - ``policy_output_tensors_torch``: the same device mapped to :func:`alloc_policy_output_tensors`;
    - ``trajectories_per_batch`` and ``total_num_trajectories``.

    Buffers are in shared memory unless ``--serial_mode``.
    """

    def __init__(self, cfg: Config, env_info: EnvInfo) -> None:
        share = not cfg.serial_mode
        spaces = PolicySpaces(cfg, env_info)
        self.trajectories_per_batch = trajectories_per_batch(cfg)
        self.total_num_trajectories = num_trajectory_slots(cfg, env_info)
        self.traj_buffers = allocate_trajectory_buffers(cfg, spaces, self.total_num_trajectories, share)
        self.slot_owners = make_slot_owners(cfg, env_info, self.total_num_trajectories)
        host = torch.device("cpu")
        self.traj_tensors_torch = {host: self.traj_buffers.by_group[0]}
        rnn_size = get_rnn_size(cfg)
        self.policy_output_tensors_torch = {host: alloc_policy_output_tensors(cfg, env_info, rnn_size, host, share)}
