"""Batcher: gathers complete trajectories of one policy into training batches.

A batch is ``--batch_size * --num_batches_per_epoch`` samples, i.e. a fixed number of trajectory slots. The
batcher copies those slots into one of ``--num_batches_to_accumulate`` batch buffers (``batch_buffers``: on the
learner's device, so a batch is copied once) and, in async mode, gives the slots back at once while another buffer
is still free, so the rollout workers never wait on training. Giving slots back is a message to each slot's rollout
worker (``on_slots_freed``), which also wakes that worker if it was waiting for them.

When a batch takes the last free buffer (the learner is behind), its slots are kept until the learner finishes a
batch: the flag's count of batches is then what waits for training, and the rollout workers collect ahead only into
the two slots per actor that remain (``num_trajectory_slots``), which keeps them double-buffered. Giving those slots
back at once let a learner-bound run collect a further batch into them, training on data two to three policy
versions old: doom_basic learned about 20k frames later than with this rule. Trajectories finished while every
buffer is taken stay in their slots; the rollout workers then run out of free slots and pause. In sync mode
(``--async_rl=False``) the slots are only given back after the learner has trained on them, which stops collection
during training.

The batcher is a component like any other: it shares its learner's loop (and process) and the batch buffers,
which the code that builds that loop allocates and hands to both, but the two talk only by messages:

    Batcher --on_batch_ready(batch_idx, env_steps)--> LearnerWorker
    LearnerWorker --on_training_done(batch_idx, release_slots)--> Batcher

``env_steps`` counts the env frames this batcher received in this run (the learner adds what a checkpoint it
resumed from had counted). In exact-resume runs (serial sync mode) the batcher also tells the sampler-state
exchange whether it holds trajectories not yet batched: such a sampler is not at rest and cannot be saved.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from sample_factory.algo.learning.batch_buffers import LearnerLink
from sample_factory.algo.runners.sf2_constructors import (
    TRAINING_INSTEAD,
    UNSET,
    is_package_form,
    passed,
    sf2_wiring_error,
)
from sample_factory.algo.utils.wiring import RUNNER, batcher_name, learner_name
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.utils.typing import Config

HEARTBEAT_PERIOD = 1.0


class BatcherComponent(Component):
    """The batcher of one policy (module docstring); ``loop_specs.build_learner`` builds it next to its learner."""

    def __init__(self, cfg: Config, link: LearnerLink, router: Router) -> None:
        """Copies finished slots of the policy's trajectory buffers into ``link.batches``, and gives the slots back
        to their owners."""
        wiring, batches, sampler_states = link.wiring, link.batches, link.sampler_states
        super().__init__(batcher_name(wiring.policy_id), router)
        self.cfg = cfg
        self.policy_id, self.traj, self.slot_owners = wiring.policy_id, wiring.traj, wiring.slot_owners
        self.batches = batches
        self.per_batch = batches.trajectories_per_batch
        self.pending: list[int] = []  # finished slots not yet in a batch, oldest first
        self.free_batches: list[int] = list(range(len(batches)))
        self.held_slots: dict[int, list[int]] = {}  # sync mode: the slots of each batch being trained on
        self.deferred: list[int] = []  # async mode: slots of the batch that took the last free buffer
        self.env_steps = 0  # env frames received in this run
        self.stopped = False
        # rollout workers being restarted: their slots freed meanwhile wait here for the new process (worker -> slots)
        self.parked: dict[int, list[int]] = {}
        if sampler_states is not None:
            sampler_states.register_rest_check(self.name, lambda: not self.pending)

    def on_start(self) -> None:
        self.loop.add_timer(HEARTBEAT_PERIOD, lambda: self.send(RUNNER, "on_heartbeat", self.name))
        self.send(RUNNER, "on_component_ready", self.name)

    def on_new_trajectories(self, slots: list[int], frames: int) -> None:
        self.pending.extend(slots)
        self.env_steps += frames
        self._make_batches()

    def on_training_done(self, batch_idx: int, release_slots: bool = True) -> None:
        """The batch may be refilled; in sync mode its slots go back to the sampler unless ``release_slots`` is
        False (the run is over and the sampler must stay at rest for its state to be saved)."""
        if self.deferred:
            deferred, self.deferred = self.deferred, []
            self._give_back(deferred)
        held = self.held_slots.pop(batch_idx, None)
        if held and release_slots:
            self._give_back(held)
        self.free_batches.append(batch_idx)
        self._make_batches()

    def _make_batches(self) -> None:
        while len(self.pending) >= self.per_batch and self.free_batches and not self.stopped:
            batch_idx = self.free_batches.pop()
            slots = self.pending[: self.per_batch]
            del self.pending[: self.per_batch]
            with self.timing.add_time("batching"):
                self.batches.fill(batch_idx, self.traj, torch.tensor(slots, dtype=torch.int64))
            if self.cfg.async_rl and self.free_batches:
                self._give_back(slots)
            elif self.cfg.async_rl:
                self.deferred.extend(slots)  # until the learner finishes a batch (see the module docstring)
            else:
                self.held_slots[batch_idx] = slots
            self.send(learner_name(self.policy_id), "on_batch_ready", batch_idx, self.env_steps)

    def _give_back(self, slots: list[int]) -> None:
        if self.parked:
            owner = self.slot_owners.owner
            for slot in [s for s in slots if owner(s) in self.parked]:
                self.parked[owner(slot)].append(slot)
            slots = [s for s in slots if owner(s) not in self.parked]
        self.slot_owners.give_back(self.send, slots)

    # ---------------------------------------------------------------- a rollout worker restarted by the runner
    def on_rollout_worker_lost(self, worker_idx: int, token: int) -> None:
        """Tell the runner which of the dead worker's slots this batcher still holds (its replacement must not
        take them yet), and keep what is freed from now on for the replacement (the dead inbox is emptied)."""
        owner = self.slot_owners.owner
        held = [s for s in self.pending if owner(s) == worker_idx]
        held += [s for slots in self.held_slots.values() for s in slots if owner(s) == worker_idx]
        held += [s for s in self.deferred if owner(s) == worker_idx]
        self.parked.setdefault(worker_idx, [])
        self.send(RUNNER, "on_restart_ack", token, self.name, {self.policy_id: held})

    def on_rollout_worker_restarted(self, worker_idx: int) -> None:
        """The replacement runs: it gets the slots freed meanwhile, and later ones directly."""
        slots = self.parked.pop(worker_idx, [])
        if slots:
            self.slot_owners.give_back(self.send, slots)

    def on_stop_requested(self) -> None:
        self.stopped = True
        self.send(RUNNER, "on_component_stopped", self.name, self.timing.tree_str())
        self.loop.component_stopped(self.name)


class Batcher(BatcherComponent):
    """Sample Factory 2's ``Batcher(evt_loop, policy_id, buffer_mgr, cfg, env_info)``: its parameters are refused with
    the way to build a run instead (``runners.sf2_constructors``).

    This package's form, ``Batcher(cfg, link, router)``, builds a ``BatcherComponent``.
    """

    def __init__(
        self,
        evt_loop: Any,
        policy_id: Any = UNSET,
        buffer_mgr: Any = UNSET,
        cfg: Any = UNSET,
        env_info: Any = UNSET,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        if not is_package_form(evt_loop):
            raise sf2_wiring_error("Batcher", "evt_loop, policy_id, buffer_mgr, cfg, env_info", TRAINING_INSTEAD)
        super().__init__(*passed(evt_loop, policy_id, buffer_mgr, cfg, env_info, *args), **kwargs)


def slice_len(s: slice) -> int:
    """Number of indices in ``s``, a slice with explicit ``start`` and ``stop`` and no step (``stop - start``)."""
    if s.start is None or s.stop is None or s.step not in (None, 1):
        raise ValueError(f"slice_len needs a slice with start and stop and a step of 1, got {s}")
    return s.stop - s.start


class SliceMerger:
    """Joins index ranges that touch into as few slices as possible, keeping their order.

    Trajectories that sit in adjacent slots of a buffer can then be copied with one slicing copy per run of adjacent
    slots instead of one per trajectory. ``total_num`` counts the indices of every slice added.
    """

    def __init__(self) -> None:
        self.merged_slices: list[slice] = []
        self.total_num = 0

    def merge_slices(self, slices: Iterable[slice]) -> list[slice]:
        """Add ``slices``, each joined to the previous one when it starts where that one stops; returns the merged
        list so far."""
        for s in slices:
            length = slice_len(s)
            last = self.merged_slices[-1] if self.merged_slices else None
            if last is not None and last.stop == s.start:
                self.merged_slices[-1] = slice(last.start, s.stop)
            else:
                self.merged_slices.append(slice(s.start, s.stop))
            self.total_num += length
        return self.merged_slices
