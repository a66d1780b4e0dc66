"""Rows of the shared trajectory buffers, gathered and sent to the device the policy computes on.

An inference worker reads, for each request, the observation and RNN state at ``(slot, step)`` of the shared CPU
trajectory buffers. On the CPU that is one indexed read per buffer, used as it is. On a CUDA device the rows must
then cross to the GPU, and a copy from ordinary (pageable) host memory is synchronous and goes through a bounce
buffer of the driver. So for a CUDA device the rows are gathered straight into *pinned* host buffers kept from one
call to the next and copied with ``non_blocking=True``: the copies run on the copy engine while the worker gathers
the next buffer and launches the forward pass, which the stream orders after them.

A pinned buffer may be overwritten only once the copy out of it has finished: each call records an event after its
copies, and the next call waits for it before gathering (by then it has normally long finished, since the worker
waited for the previous forward pass's outputs).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

Sources = Mapping[str, "Tensor | Sources"]


class StagedGather:
    """``source[slots, steps]`` for every tensor of a (nested) dict of ``[num_slots, T+1, ...]`` buffers, on ``device``.

    Args:
        device: where the gathered rows are used.
        staged: gather into reusable host buffers and copy them with ``non_blocking``; by default exactly when
            ``device`` is a CUDA device (where the buffers are pinned). On the CPU the default is the plain indexed
            read, whose result the caller owns; a staged result on the CPU is a view of a buffer that the next call
            overwrites.
    """

    def __init__(self, device: torch.device | str, staged: bool | None = None) -> None:
        self.device = torch.device(device)
        self.staged = self.device.type == "cuda" if staged is None else staged
        self.pin_memory = self.staged and self.device.type == "cuda"
        self.buffers: dict[tuple[str, ...], Tensor] = {}
        self._copies_done: torch.cuda.Event | None = None

    def gather(self, sources: Sources, slots: Tensor, steps: Tensor) -> dict:
        """The rows ``(slots[i], steps[i])`` of every buffer in ``sources``, in a dict of the same shape."""
        if not self.staged:
            return _map(sources, lambda _, source: source[slots, steps].to(self.device))
        if self._copies_done is not None:
            self._copies_done.synchronize()  # the previous call's copies no longer read the buffers
        rows = slots * _steps_per_slot(sources) + steps  # index of (slot, step) once the two dims are flattened
        gathered = _map(sources, lambda path, source: self._stage(path, source, rows))
        if self.device.type == "cuda":
            self._copies_done = torch.cuda.Event()
            self._copies_done.record(torch.cuda.current_stream(self.device))
        return gathered

    def _stage(self, path: tuple[str, ...], source: Tensor, rows: Tensor) -> Tensor:
        buffer = self._buffer(path, source, len(rows))
        torch.index_select(source.flatten(0, 1), 0, rows, out=buffer)
        return buffer.to(self.device, non_blocking=True)

    def _buffer(self, path: tuple[str, ...], source: Tensor, num_rows: int) -> Tensor:
        """The first ``num_rows`` rows of this source's host buffer, made (or grown) on first need."""
        buffer = self.buffers.get(path)
        if buffer is None or len(buffer) < num_rows or buffer.dtype != source.dtype:
            shape = (num_rows, *source.shape[2:])
            buffer = torch.empty(shape, dtype=source.dtype, pin_memory=self.pin_memory)
            self.buffers[path] = buffer
        return buffer[:num_rows]


def _steps_per_slot(sources: Sources) -> int:
    """``T+1``, the second dimension that every buffer shares."""
    lengths = {tensor.shape[1] for tensor in _leaves(sources)}
    if len(lengths) != 1:
        raise ValueError(f"StagedGather: the buffers have different numbers of steps per slot {sorted(lengths)}")
    return lengths.pop()


def _leaves(sources: Sources):
    for value in sources.values():
        if isinstance(value, Mapping):
            yield from _leaves(value)
        else:
            yield value


def _map(sources: Sources, fn, path: tuple[str, ...] = ()) -> dict:
    return {
        key: _map(value, fn, (*path, key)) if isinstance(value, Mapping) else fn((*path, key), value)
        for key, value in sources.items()
    }
