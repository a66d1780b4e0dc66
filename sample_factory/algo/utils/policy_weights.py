"""How a learner's weights reach the inference workers: one published copy, a sequence counter, no reader lock.

The learner (the one writer of a policy's weights) copies its state dict into the published tensors after each
training step; inference workers copy them out into their own models when the version moved. Readers take no
lock, so a reader that is slow, paused or killed in the middle of a copy can never hold up a training step.
Instead a sequence counter in shared memory tells a reader whether its copy is whole (a *seqlock*):

- the writer makes the counter odd, copies, waits until its copies have landed (copies on a GPU are
  asynchronous), writes the version, and makes the counter even again;
- a reader waits while the counter is odd (a write is under way, as long as one copy of the weights), notes it,
  copies, waits until its own copies have landed, and reads the counter again: if it moved, a publish overlapped
  the copy and the reader copies again. A torn copy is never used.

Writers still take the lock among themselves, so two publishes never interleave; readers never take it.

The protocol needs one process's writes to the counter and the weights to become visible to another in the order
they were made. x86 CPUs give that order for host memory, and on a GPU the driver calls that wait for the copies
(see :func:`wait_for_copies`) separate the copies from the counter. On CPUs with a weaker memory order (ARM) the host
path relies on the barriers inside the torch calls between the steps; it has not been checked there.

Where the published copy lives: in host shared memory by default, or on a CUDA device when the learner and all its
readers compute on that device (``gpu_utils.weights_buffer_device``). A publish is then a device-to-device copy, and
so is a reload: nothing goes through host memory after a training step. Device tensors are made before the worker
processes start and reach them through torch's CUDA IPC when the process arguments are pickled; the process that
made them (the runner) keeps them alive for the whole run.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import Tensor, nn

# How long a reader sleeps between two looks at a counter left odd by a write under way.
WRITER_POLL_S = 1e-4


class PolicyWeights:
    """A policy's latest published weights and their version, readable by any process without a lock.

    Args:
        state_dict: the weights to start from; fixes the names, shapes and dtypes of every later publish.
        lock: serialises writers (a ``spawn`` multiprocessing lock in parallel mode, any lock in one process).
        device: where the published copy lives; None or ``cpu`` for host shared memory.

    ``torn_reads`` counts, in this process, the copies a reader redid because a publish overlapped them.
    """

    def __init__(self, state_dict: Mapping[str, Tensor], lock: Any, device: torch.device | str | None = None) -> None:
        self.device = torch.device("cpu") if device is None else torch.device(device)
        self.tensors = {key: _published_copy(value, self.device) for key, value in state_dict.items()}
        self.version = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.sequence = torch.zeros(1, dtype=torch.int64).share_memory_()  # odd while a publish is under way
        self.lock = lock
        self.torn_reads = 0

    # ---- writer ---------------------------------------------------------------------------------------------------

    def publish(self, state_dict: Mapping[str, Tensor], version: int) -> None:
        """Copy ``state_dict`` in and make it readable as ``version``; never waits for a reader.

        Raises KeyError or RuntimeError, before anything is written, when ``state_dict`` does not fit.
        """
        self._check_fits(state_dict)
        with self.lock:
            self.sequence[0] += 1
            try:
                for key, value in state_dict.items():
                    self.tensors[key].copy_(value.detach())
                wait_for_copies([self.device, *(value.device for value in state_dict.values())])
                self.version[0] = version
            finally:
                self.sequence[0] += 1

    def recover_from_dead_writer(self) -> bool:
        """The writer's process died (the runner calls this before starting a new learner): release the lock it
        may have held and close a publish it left open, so readers stop waiting and the new writer can publish.

        A publish cut short leaves a mix of two consecutive versions' weights, used by the inference workers only
        until the new learner publishes its checkpoint's. Returns True when a publish was left open.
        """
        if not self.lock.acquire(False):  # held by the dead writer: no live process takes this lock but a learner
            self.lock.release()
        else:
            self.lock.release()
        if int(self.sequence[0]) % 2 == 0:
            return False
        self.sequence[0] += 1
        return True

    def _check_fits(self, state_dict: Mapping[str, Tensor]) -> None:
        for key, value in state_dict.items():
            if key not in self.tensors:
                raise KeyError(f"publish: {key!r} is not among the published weights (a model of another shape?)")
            if value.shape != self.tensors[key].shape:
                raise RuntimeError(
                    f"publish: {key!r} has shape {tuple(value.shape)}, the published weights "
                    f"{tuple(self.tensors[key].shape)}: publish the state dict of the same model architecture"
                )

    # ---- readers --------------------------------------------------------------------------------------------------

    def latest_version(self) -> int:
        return int(self.version[0])

    def load_into(self, model: nn.Module) -> int:
        """Copy the latest whole set of published weights into ``model`` (any device); returns their version.

        Copies again as long as a publish overlaps the copy, which needs a publish per copy of the weights to
        starve: the learner publishes once per training step.
        """
        while True:
            version = self.try_load_into(model)
            if version is not None:
                return version

    def try_load_into(self, model: nn.Module) -> int | None:
        """One attempt of :meth:`load_into`: the version loaded, or None when a publish overlapped the copy
        (``model`` then holds a mix of two versions: load again before using it)."""
        before = self._even_sequence()
        version = int(self.version[0])
        model.load_state_dict(self.tensors, strict=True)
        wait_for_copies([self.device, *(tensor.device for tensor in model.state_dict().values())])
        if int(self.sequence[0]) != before:
            self.torn_reads += 1
            return None
        return version

    def _even_sequence(self) -> int:
        """The sequence counter once no publish is under way."""
        while True:
            sequence = int(self.sequence[0])
            if sequence % 2 == 0:
                return sequence
            time.sleep(WRITER_POLL_S)


def _published_copy(value: Tensor, device: torch.device) -> Tensor:
    """A tensor of ``value``'s shape and dtype on ``device`` holding its data; in shared memory on the host, shared
    through CUDA IPC on a GPU. Made directly on ``device``: no trip through host memory."""
    copy = torch.empty(value.shape, dtype=value.dtype, device=device)
    copy.copy_(value.detach())
    if device.type == "cpu":
        copy.share_memory_()
    return copy


def wait_for_copies(devices: Iterable[torch.device]) -> None:
    """Block until the copies this thread issued on each CUDA device among ``devices`` have landed.

    Copies from or to a GPU run asynchronously on the calling thread's current stream: without this wait the
    sequence counter could announce weights still in flight. Waits on an event recorded after the copies, not on
    the whole device, so other work of the process is not waited for. Host (and other) devices copy synchronously.
    """
    for device in {torch.device(device) for device in devices if torch.device(device).type == "cuda"}:
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(device))
        event.synchronize()
