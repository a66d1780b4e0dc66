"""Decentralised data-parallel SGD (DD-PPO, Wijmans et al. 2020): every rank's learner takes the same step.

Each rank computes the gradient of its own minibatch; one all-reduce per SGD step averages the gradients, so every
rank clips and applies the same gradient to the same weights and their weights stay identical without ever being
sent. With ``FlatAdam`` the gradients already live in one flat tensor, which is reduced as it is; otherwise they are
copied into one flat buffer per device and dtype, reduced and copied back. A parameter that got no gradient on a rank
takes part with zeros, so every rank updates the same parameters (torch's Adam would skip it on some ranks only).

The learning-rate schedules see the same numbers on every rank too: the step count is the same everywhere, and a
KL-adaptive schedule is given the ranks' average KL (one more, 4-byte, all-reduce per SGD step).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

from sample_factory.algo.learning.lr_schedule import LrSchedule
from sample_factory.algo.learning.optimizers import SgdStep
from sample_factory.utils.rank_group import RankGroup
from sample_factory.utils.timing import Timing


class AveragedSgdStep(SgdStep):
    """:class:`SgdStep` with the gradients averaged over the ranks between the backward pass and the update."""

    def __init__(
        self, optimizer: torch.optim.Optimizer, params: Iterable[Tensor], group: RankGroup, timing: Timing, flat: bool
    ) -> None:
        # no gradient watch: after the all-reduce every parameter has a gradient on every rank (see the module doc)
        super().__init__(optimizer, params, flat=flat, watch_gradients=False)
        self.group = group
        self.timing = timing
        self.steps = 0

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
                self.group.all_reduce_mean_(flat.flat_grad, self._what())
            else:
                self._average_per_tensor()
        return self._clip_and_update(max_norm)

    def _what(self) -> str:
        return f"the gradient all-reduce of SGD step {self.steps}"

    def _average_per_tensor(self) -> None:
        """One flat buffer per (device, dtype) in parameter order, the same layout on every rank."""
        groups: dict[tuple, list[Tensor]] = {}
        for param in self.params:
            if param.grad is None:
                param.grad = torch.zeros_like(param)
            groups.setdefault((param.grad.device, param.grad.dtype), []).append(param.grad)
        for grads in groups.values():
            buffer = torch.cat([g.reshape(-1) for g in grads])
            self.group.all_reduce_mean_(buffer, self._what())
            for grad, averaged in zip(grads, buffer.split([g.numel() for g in grads]), strict=True):
                grad.copy_(averaged.view_as(grad))


class RankAveragedKl:
    """A KL-adaptive schedule that is given, after every SGD step, the ranks' average KL instead of its own.

    Everything else (``lr``, ``after_epoch``, ``state_dict``, ...) is the wrapped schedule's.
    """

    needs_kl = True

    def __init__(self, schedule: LrSchedule, group: RankGroup) -> None:
        self.schedule = schedule
        self.group = group

    def after_minibatch(self, kl: Tensor | None) -> None:
        if kl is None:
            raise ValueError("a kl_adaptive lr schedule needs the minibatch's KL divergence after every step")
        averaged = kl.detach().clone()
        self.group.all_reduce_mean_(averaged, "the KL all-reduce of the adaptive learning rate")
        self.schedule.after_minibatch(averaged)

    def __getattr__(self, name: str):
        if name == "schedule":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.schedule, name)


def averaged_over_ranks(
    group: RankGroup,
    optimizer: torch.optim.Optimizer,
    params: list[Tensor],
    flat: bool,
    schedule: LrSchedule,
    timing: Timing,
) -> tuple[AveragedSgdStep, LrSchedule | RankAveragedKl]:
    """The SGD step and the learning-rate schedule of a learner whose gradients are averaged over ``group``."""
    step = AveragedSgdStep(optimizer, params, group, timing, flat)
    return step, RankAveragedKl(schedule, group) if schedule.needs_kl else schedule
