"""Where one policy's training batches live, and the single copy that brings trajectories there.

A batch is assembled once, on the learner's device. The batcher gathers a batch's trajectory slots out of the
shared slot buffers (host memory, written by the rollout and inference workers) and the learner trains on the
result where it lies; ``Learner.prepare_batch`` then finds the batch already on its device (``.to(device)`` hands
back the very same tensors), so no second copy is made.

- CPU learner: the batch buffers are host tensors and the gather writes straight into them. One copy, nothing
  extra.
- CUDA learner: the batch buffers are on the GPU. The slots are gathered into a page-locked (pinned) host staging
  buffer, one per batch buffer, then copied to the GPU with ``non_blocking=True``: the DMA engine reads pinned
  memory directly and the batcher does not wait for the transfer. The trajectory slots are free as soon as the
  gather into staging is done, before the transfer ends.
- Another accelerator: staged the same way, but through ordinary host memory and a copy that waits (torch offers
  pinned memory and asynchronous host-to-device copies for CUDA only).

A batch buffer is refilled only after the learner gave it back. Its staging buffer could still be the source of a
transfer in flight if the learner gave the batch back without reading it (e.g. while stopping), so the end of each
asynchronous copy is recorded as a CUDA event and waited for before that staging buffer is written again.

The buffers are allocated once, by the code that builds the learner's loop (``learning.loop_specs.build_learner``),
and handed to both the batcher, which fills them, and the learner worker, which trains on them; the two only
exchange batch indices.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.utils.sampler_state import SamplerStateExchange
from sample_factory.algo.utils.shared_buffers import allocate_trajectories, trajectories_per_batch
from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.tensor_dict import TensorDict, copy_slots
from sample_factory.utils.typing import Config


@dataclass(frozen=True)
class BatchPlacement:
    """How batches for a learner on ``device`` are laid out and filled."""

    device: torch.device  # where the batch buffers live: the learner's device
    staged: bool  # gathered into a host staging buffer first, then copied to the device
    pinned: bool  # the staging buffer is page-locked, so the copy can be asynchronous
    non_blocking: bool  # the host does not wait for the copy to the device

    def __post_init__(self) -> None:
        if not self.staged and self.device.type != "cpu":
            raise ValueError(
                f"batches on {self.device} must be staged: the slot buffers are in host memory, and a gather cannot "
                "write across devices (use batch_placement(device))"
            )
        if self.non_blocking and not self.pinned:
            raise ValueError("a non-blocking copy to the device needs pinned staging (use batch_placement(device))")


def batch_placement(device: torch.device | str) -> BatchPlacement:
    """The layout for a learner on ``device``; decides only, allocates nothing (so it can be asked about any
    device, present or not)."""
    device = torch.device(device)
    if device.type == "cpu":
        return BatchPlacement(device, staged=False, pinned=False, non_blocking=False)
    cuda = device.type == "cuda"
    return BatchPlacement(device, staged=True, pinned=cuda, non_blocking=cuda)


class TrainingBatches:
    """The ``--num_batches_to_accumulate`` batch buffers of one policy, each ``trajectories_per_batch(cfg)``
    trajectories in the slot layout of ``shared_buffers`` (``[N, T(+1), ...]``).

    ``batches[i]`` is what the learner trains on; ``staging[i]`` (staged placements only) its host-side source.
    """

    def __init__(self, cfg: Config, env_info: EnvInfo, placement: BatchPlacement) -> None:
        self.placement = placement
        self.trajectories_per_batch = trajectories_per_batch(cfg)
        self.samples_per_batch = self.trajectories_per_batch * cfg.rollout
        num = max(1, cfg.num_batches_to_accumulate)
        host = [allocate_trajectories(cfg, env_info, self.trajectories_per_batch, share=False) for _ in range(num)]
        if not placement.staged:
            self.batches: list[TensorDict] = [b.apply(lambda t: t.to(placement.device)) for b in host]
            self.staging: list[TensorDict] | None = None
        else:
            self.staging = [b.apply(Tensor.pin_memory) for b in host] if placement.pinned else host
            self.batches = [b.apply(lambda t: torch.zeros_like(t, device=placement.device)) for b in host]
        self._copies_in_flight: list[torch.cuda.Event | None] = [None] * num

    @property
    def device(self) -> torch.device:
        return self.placement.device

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, batch_idx: int) -> TensorDict:
        return self.batches[batch_idx]

    def fill(self, batch_idx: int, traj: TensorDict, slots: Tensor) -> None:
        """``batches[batch_idx][i] = traj[slots[i]]``: the one copy of these trajectories out of the slot buffers.

        When this returns, the slots may be reused; with a non-blocking placement the copy to the device may still
        be running, ordered before anything the learner later runs on the device's current stream.
        """
        if self.staging is None:
            copy_slots(traj, slots, self.batches[batch_idx])
            return
        in_flight = self._copies_in_flight[batch_idx]
        if in_flight is not None:
            in_flight.synchronize()  # the previous copy out of this staging buffer must have ended
            self._copies_in_flight[batch_idx] = None
        staging = self.staging[batch_idx]
        copy_slots(traj, slots, staging)
        copy_leaves(staging, self.batches[batch_idx], non_blocking=self.placement.non_blocking)
        if self.placement.non_blocking:
            event = torch.cuda.Event()
            event.record()
            self._copies_in_flight[batch_idx] = event


def copy_leaves(src: TensorDict, dst: TensorDict, non_blocking: bool = False) -> None:
    """``dst[key].copy_(src[key])`` for every leaf, into the existing ``dst`` tensors (possibly on another device)."""
    for key, value in src.items():
        if isinstance(value, dict):
            copy_leaves(value, dst[key], non_blocking)
        else:
            dst[key].copy_(value, non_blocking=non_blocking)


@dataclass(frozen=True)
class LearnerLink:
    """What a policy's batcher and learner worker share: the policy's wiring (spaces, trajectory buffers, slot
    owners, weights), the batch buffers the batcher fills and the learner trains on, and, for exact resume in serial
    sync mode, the sampler-state exchange (``algo/utils/sampler_state.py``)."""

    wiring: PolicyWiring
    batches: TrainingBatches
    sampler_states: SamplerStateExchange | None = None
