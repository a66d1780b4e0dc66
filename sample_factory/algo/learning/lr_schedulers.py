"""Sample Factory 2's learning-rate scheduler objects (``learner.get_lr_scheduler(cfg)``) over this package's rules.

The learner of this package runs the schedules of ``lr_schedule`` (one object that keeps the rate). Sample Factory
2's scheduler interface is the one a script written for it calls: the caller keeps the rate and asks

    lr = scheduler.update(lr, recent_kls)

after every minibatch when ``scheduler.invoke_after_each_minibatch()`` is true, after every epoch when
``scheduler.invoke_after_each_epoch()`` is. ``recent_kls`` are the KL divergences of the minibatches since the last
call. The rules, and so the numbers, are those of ``lr_schedule``: ``kl_adaptive_lr`` for the KL-adaptive schedulers
(the last minibatch's KL per minibatch, the mean over the epoch per epoch) and the linear decay of
``--learning_rate`` to 0 over ``linear_decay_updates(cfg)`` minibatch updates.
"""

from __future__ import annotations

from collections.abc import Sequence

from sample_factory.algo.learning.lr_schedule import LR_SCHEDULES, kl_adaptive_lr, linear_decay_updates
from sample_factory.utils.typing import Config


class LearningRateScheduler:
    """``--lr_schedule=constant``, and the base of the others: the rate is never changed."""

    def invoke_after_each_minibatch(self) -> bool:
        """Whether ``update`` is meant to be called after every SGD step."""
        return False

    def invoke_after_each_epoch(self) -> bool:
        """Whether ``update`` is meant to be called after every epoch."""
        return False

    def update(self, current_lr: float, recent_kls: Sequence[float]) -> float:
        """The rate for the next SGD steps, given the current one and the minibatches' KLs since the last call."""
        return current_lr


class KlAdaptiveScheduler(LearningRateScheduler):
    """The KL-adaptive rule of ``lr_schedule.kl_adaptive_lr`` with ``--lr_schedule_kl_threshold``,
    ``--lr_adaptive_min`` and ``--lr_adaptive_max``; subclasses pick which KL the rule reads."""

    def __init__(self, cfg: Config) -> None:
        self.lr_schedule_kl_threshold = cfg.lr_schedule_kl_threshold
        self.min_lr = cfg.lr_adaptive_min
        self.max_lr = cfg.lr_adaptive_max

    def num_recent_kls_to_use(self) -> int:
        """How many of the latest KLs the rule averages (the caller may keep only that many)."""
        raise NotImplementedError(f"{type(self).__name__} must say how many recent KLs it reads")

    def update(self, current_lr: float, recent_kls: Sequence[float]) -> float:
        if not recent_kls:
            raise ValueError(f"{type(self).__name__}.update needs the KL divergence of at least one minibatch")
        used = list(recent_kls)[-self.num_recent_kls_to_use() :]
        kl = sum(float(k) for k in used) / len(used)
        return kl_adaptive_lr(current_lr, kl, self.lr_schedule_kl_threshold, self.min_lr, self.max_lr)


class KlAdaptiveSchedulerPerMinibatch(KlAdaptiveScheduler):
    """``--lr_schedule=kl_adaptive_minibatch``: after every SGD step, from that minibatch's KL."""

    def num_recent_kls_to_use(self) -> int:
        return 1

    def invoke_after_each_minibatch(self) -> bool:
        return True


class KlAdaptiveSchedulerPerEpoch(KlAdaptiveScheduler):
    """``--lr_schedule=kl_adaptive_epoch``: after every epoch, from the mean KL of its ``--num_batches_per_epoch``
    minibatches."""

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self.num_batches_per_epoch = cfg.num_batches_per_epoch

    def num_recent_kls_to_use(self) -> int:
        return self.num_batches_per_epoch

    def invoke_after_each_epoch(self) -> bool:
        return True


class LinearDecayScheduler(LearningRateScheduler):
    """``--lr_schedule=linear_decay``: ``learning_rate * (1 - k / total)`` after ``k`` minibatch updates, never below 0,
    with ``total = linear_decay_updates(cfg)`` (``lr_schedule``'s horizon)."""

    def __init__(self, cfg: Config) -> None:
        self.initial_lr = float(cfg.learning_rate)
        self.total_updates = linear_decay_updates(cfg)
        self.step = 0

    def invoke_after_each_minibatch(self) -> bool:
        return True

    def update(self, current_lr: float, recent_kls: Sequence[float]) -> float:
        self.step += 1
        if self.total_updates <= 0:
            return 0.0
        return self.initial_lr * max(0.0, 1.0 - self.step / self.total_updates)


def get_lr_scheduler(cfg: Config) -> LearningRateScheduler:
    """The scheduler of ``--lr_schedule``."""
    schedulers: dict[str, type[LearningRateScheduler]] = {
        "constant": LearningRateScheduler,
        "kl_adaptive_minibatch": KlAdaptiveSchedulerPerMinibatch,
        "kl_adaptive_epoch": KlAdaptiveSchedulerPerEpoch,
        "linear_decay": LinearDecayScheduler,
    }
    if cfg.lr_schedule not in schedulers:
        raise ValueError(f"--lr_schedule={cfg.lr_schedule!r} is not supported: use one of {', '.join(LR_SCHEDULES)}")
    scheduler = schedulers[cfg.lr_schedule]
    return scheduler() if scheduler is LearningRateScheduler else scheduler(cfg)
