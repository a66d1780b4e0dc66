"""Decentralised data-parallel SGD (DD-PPO, Wijmans et al. 2020): every rank's learner takes the same step.

Each rank computes the gradient of its own minibatch; one all-reduce per SGD step averages the gradients, so every
rank clips and applies the same gradient to the same weights and their weights stay identical without ever being
sent. With ``FlatAdam`` the gradients already live in one flat tensor, which is reduced as it is; otherwise they are
copied into one flat buffer per device and dtype (laid out once), reduced and copied back.

A parameter can lack a gradient on some rank (a branch of the model that rank's minibatch did not use): each rank
sends with its gradients one count per parameter (1 if it has a gradient, else 0), in the same buffer, so the reduced
counts say how many ranks had one. A parameter's gradient is the mean over those ranks, which is what one process
training on their minibatches would compute for it, where a mean over every rank would shrink it by the ranks that
had none. A parameter no rank had a gradient for gets none (``grad = None``), so torch's Adam skips it as in a
single process instead of moving it with its momentum. Parameters with ``requires_grad=False`` take no part at all.
Reading the counts costs one device synchronisation per SGD step.

The learning-rate schedules see the same numbers on every rank too: the step count is the same everywhere, and a
KL-adaptive schedule is given the ranks' average KL (``kl_mean_over_ranks``: one more, 4-byte, all-reduce where the
schedule reads a KL: per SGD step, or per epoch for ``kl_adaptive_epoch``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from sample_factory.algo.learning.optimizers import FlatAdam, SgdStep
from sample_factory.utils.rank_group import RankGroup
from sample_factory.utils.timing import Timing


class _GradientBuffer:
    """The gradients of some parameters of one device and dtype, then one count per parameter, as one flat tensor:
    the layout is the same on every rank, and the counts travel in the gradients' all-reduce (exact integers up to
    256 ranks in bfloat16, 2048 in float16)."""

    def __init__(self, params: list[Tensor]) -> None:
        self.params = params
        sizes = [p.numel() for p in params]
        total = sum(sizes)
        self.buffer = torch.empty(total + len(params), dtype=params[0].dtype, device=params[0].device)
        self.views = [view.view_as(p) for view, p in zip(self.buffer[:total].split(sizes), params, strict=True)]
        self.counts = self.buffer[total:]

    def fill(self) -> None:
        """Copy the gradients in, zeros where there is none, and count 1 for each parameter that has one."""
        present = []
        for param, view in zip(self.params, self.views, strict=True):
            present.append(param.grad is not None)
            if param.grad is None:
                view.zero_()
            else:
                view.copy_(param.grad)
        self.counts.copy_(torch.tensor(present))

    def spread(self) -> None:
        """After the all-reduce: each gradient is the mean over the ranks that had one; None where none had."""
        for param, view, count in zip(self.params, self.views, self.counts.tolist(), strict=True):
            if count == 0:
                param.grad = None
                continue
            view.div_(count)
            if param.grad is None:
                param.grad = torch.empty_like(param)
            param.grad.copy_(view)


class AveragedSgdStep(SgdStep):
    """:class:`SgdStep` with the gradients averaged over the ranks between the backward pass and the update."""

    def __init__(
        self, optimizer: torch.optim.Optimizer, params: Iterable[Tensor], group: RankGroup, timing: Timing, flat: bool
    ) -> None:
        super().__init__(optimizer, params, flat=False)
        if flat and FlatAdam.applies(optimizer) and all(p.requires_grad for p in self.params):
            # the hooks say which parameters got a gradient; their counts ride in the spare tail of the flat buffer
            self.flat = FlatAdam(optimizer, watch_gradients=True, spare=len(self.params))
        self.group = group
        self.timing = timing
        self.steps = 0
        self._trainable: list[bool] = []  # requires_grad of each parameter when the buffers were laid out
        self._buffers: list[_GradientBuffer] = []

    def __call__(self, loss: Tensor, max_norm: float) -> Tensor:
        flat = self.flat
        flat_active = flat is not None and flat.zero_grad()
        if not flat_active:
            for param in self.params:
                param.grad = None
        loss.backward()
        self.steps += 1
        with self.timing.add_time("all_reduce"):
            if flat_active:
                self._average_flat(flat)
            else:
                self._average_per_tensor()
        return self._clip_and_update(max_norm)

    def _what(self) -> str:
        return f"the gradient all-reduce of SGD step {self.steps}"

    def _average_flat(self, flat: FlatAdam) -> None:
        """Reduce the flat gradients and counts; a parameter no rank had a gradient for is marked as not received,
        which makes ``FlatAdam`` leave flat mode and give it no gradient (on every rank alike: the counts agree)."""
        flat.spare.copy_(torch.tensor(flat.received))
        self.group.all_reduce_sum_(flat.grad_buffer, self._what)
        counts = flat.spare.tolist()
        world_size = self.group.world_size
        if all(count == world_size for count in counts):
            flat.flat_grad.div_(world_size)
            return
        for param, count in zip(self.params, counts, strict=True):
            if count:
                param.grad.div_(count)
        flat.received[:] = [count > 0 for count in counts]

    def _average_per_tensor(self) -> None:
        """One buffer per (device, dtype) of the trainable parameters, laid out again only when ``requires_grad``
        changed (a part of the model frozen or thawed); one all-reduce each."""
        trainable = [p.requires_grad for p in self.params]
        if trainable != self._trainable:
            self._trainable = trainable
            self._buffers = self._lay_out_buffers()
        for buffer in self._buffers:
            buffer.fill()
            self.group.all_reduce_sum_(buffer.buffer, self._what)
            buffer.spread()

    def _lay_out_buffers(self) -> list[_GradientBuffer]:
        groups: dict[tuple, list[Tensor]] = {}
        for param in self.params:
            if param.requires_grad:
                groups.setdefault((param.device, param.dtype), []).append(param)
        return [_GradientBuffer(params) for params in groups.values()]


def kl_mean_over_ranks(group: RankGroup) -> Callable[[Tensor], Tensor]:
    """The ``reduce_kl`` of a KL-adaptive schedule in a distributed run: the ranks' mean of a KL (a copy)."""

    def reduce(kl: Tensor) -> Tensor:
        averaged = kl.detach().clone()
        group.all_reduce_mean_(averaged, "the KL all-reduce of the adaptive learning rate")
        return averaged

    return reduce
