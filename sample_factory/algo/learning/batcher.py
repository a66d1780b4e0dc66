"""Batcher: gathers complete trajectories of one policy into training batches.

A batch is ``--batch_size * --num_batches_per_epoch`` samples, i.e. a fixed
number of trajectory slots. The batcher copies those slots into one of
``--num_batches_to_accumulate`` preallocated batch buffers and, in async mode,
gives the slots back at once so the rollout workers never wait on training.
Giving slots back is a message to each slot's rollout worker (``on_slots_freed``),
which also wakes that worker if it was waiting for them.
When every batch buffer is taken (the learner is behind), trajectories stay
in their slots; the rollout workers then run out of free slots and pause.
In sync mode (``--async_rl=False``) the slots are only given back after the
learner has trained on them, which stops collection during training.
"""

from __future__ import annotations

import torch

from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.event_loop import Component, Router
from sample_factory.algo.utils.shared_buffers import SlotOwners, allocate_trajectories, trajectories_per_batch
from sample_factory.algo.utils.tensor_dict import TensorDict, copy_slots
from sample_factory.algo.utils.wiring import batcher_name, learner_name
from sample_factory.utils.typing import Config, PolicyID


class Batcher(Component):
    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        policy_id: PolicyID,
        router: Router,
        traj: TensorDict,
        slot_owners: SlotOwners,
    ) -> None:
        super().__init__(batcher_name(policy_id), router)
        self.cfg = cfg
        self.env_info = env_info
        self.policy_id = policy_id
        self.traj = traj
        self.slot_owners = slot_owners
        self.per_batch = trajectories_per_batch(cfg)
        self.pending: list[int] = []
        self.batches: list[TensorDict] = []
        self.free_batches: list[int] = []
        self.held_slots: dict[int, list[int]] = {}
        self.env_steps = 0  # frames received, restored from the checkpoint by the learner worker
        self.stopped = False

    def on_start(self) -> None:
        num = max(1, self.cfg.num_batches_to_accumulate)
        self.batches = [allocate_trajectories(self.cfg, self.env_info, self.per_batch, share=False) for _ in range(num)]
        self.free_batches = list(range(num))

    def on_new_trajectories(self, slots: list[int], frames: int) -> None:
        self.pending.extend(slots)
        self.env_steps += frames
        self._make_batches()

    def on_training_done(self, batch_idx: int, release_slots: bool = True) -> None:
        """The batch may be refilled; in sync mode its slots go back to the sampler unless ``release_slots`` is
        False (the run is over and the sampler must stay at rest for its state to be saved)."""
        held = self.held_slots.pop(batch_idx, None)
        if held and release_slots:
            self.slot_owners.give_back(self.send, held)
        self.free_batches.append(batch_idx)
        self._make_batches()

    def _make_batches(self) -> None:
        while len(self.pending) >= self.per_batch and self.free_batches and not self.stopped:
            batch_idx = self.free_batches.pop()
            slots = self.pending[: self.per_batch]
            del self.pending[: self.per_batch]
            with self.timing.add_time("batching"):
                copy_slots(self.traj, torch.tensor(slots, dtype=torch.int64), self.batches[batch_idx])
            if self.cfg.async_rl:
                self.slot_owners.give_back(self.send, slots)
            else:
                self.held_slots[batch_idx] = slots
            self.send(learner_name(self.policy_id), "on_batch_ready", batch_idx)

    def on_stop_requested(self) -> None:
        self.stopped = True
