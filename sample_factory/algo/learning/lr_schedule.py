"""Learning-rate schedules (``--lr_schedule``): constant, adapted to the policy's KL divergence, or linearly decayed.

The KL-adaptive rule keeps each update's step in policy space near a target, the idea behind the adaptive KL
penalty of the PPO paper applied to the learning rate instead. With ``k`` the measured KL(old || new) and ``thr``
= ``--lr_schedule_kl_threshold``:

- ``k > 2 * thr``: the policy moved too far, ``lr <- max(lr / 1.5, --lr_adaptive_min)``;
- ``k < thr / 2``: it barely moved, ``lr <- min(lr * 1.5, --lr_adaptive_max)``;
- otherwise ``lr`` is kept.

A move never goes the wrong way: a decrease cannot raise an lr already below ``--lr_adaptive_min`` and an increase
cannot lower one above ``--lr_adaptive_max``. ``kl_adaptive_minibatch`` applies the rule after every SGD step with
that minibatch's KL; ``kl_adaptive_epoch`` once per epoch with the mean KL of the epoch's minibatches. In a
distributed run the schedule is given ``reduce_kl``, the mean over the ranks, applied where the rule reads a KL (per
step, or once per epoch to the epoch's mean: the mean of means is the same), so every rank's rate moves alike.

``linear_decay`` is PPO's annealing, with Sample Factory 2's horizon: the rate falls in a straight line from
``--learning_rate`` to 0 over ``train_for_env_steps // batch_size * num_epochs`` minibatch updates (SGD steps), so
update ``k`` (counted from 0) runs at ``learning_rate * (1 - k / total)`` and every update from ``total`` on at 0.
The horizon counts env steps, not samples: with ``--env_frameskip`` N (Atari: 4) a run ends after about ``total / N``
updates, i.e. at ``(1 - 1/N)`` of the starting rate: the formula is Sample Factory 2's, kept as it is. In a distributed
run of W ranks every SGD step consumes a minibatch on each rank and ``--train_for_env_steps`` counts all ranks' steps,
so the horizon is ``train_for_env_steps // (batch_size * W) * num_epochs`` steps, the same on every rank.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

from sample_factory.utils.typing import Config

LR_CHANGE_FACTOR = 1.5


def kl_adaptive_lr(lr: float, kl: float, kl_threshold: float, lr_min: float, lr_max: float) -> float:
    """The next learning rate after a step whose policy KL divergence was ``kl`` (rule in the module docstring)."""
    if kl > 2.0 * kl_threshold:
        return min(lr, max(lr / LR_CHANGE_FACTOR, lr_min))
    if kl < 0.5 * kl_threshold:
        return max(lr, min(lr * LR_CHANGE_FACTOR, lr_max))
    return lr


class ConstantLrSchedule:
    """``--lr_schedule=constant``: the learning rate never changes (unless a checkpoint or PBT sets it)."""

    needs_kl = False  # whether ``after_minibatch`` must be given each SGD step's KL divergence

    def __init__(self, lr: float) -> None:
        self.lr = lr

    def after_minibatch(self, kl: Tensor | None) -> None:
        """Called after every SGD step with that minibatch's mean KL when ``needs_kl`` (a tensor: reading it may sync
        the GPU), otherwise with None."""

    def after_epoch(self) -> None:
        """Called after every epoch."""

    def set_learning_rate(self, lr: float) -> None:
        """A new ``--learning_rate`` (PBT, a policy's saved hyper-parameters): the rate from the next step on."""
        self.lr = float(lr)

    def state_dict(self) -> dict[str, float]:
        return {"lr": self.lr}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.lr = float(state["lr"])


class KlAdaptiveLrSchedule(ConstantLrSchedule):
    """``kl_adaptive_minibatch`` / ``kl_adaptive_epoch``: the KL rule of the module docstring."""

    needs_kl = True

    def __init__(self, cfg: Config, per_epoch: bool, reduce_kl: Callable[[Tensor], Tensor] | None = None) -> None:
        """``reduce_kl``: maps this process's KL to the one the rule uses (the ranks' mean); None: the local KL."""
        super().__init__(cfg.learning_rate)
        self.per_epoch = per_epoch
        self.reduce_kl = reduce_kl
        self.kl_threshold = cfg.lr_schedule_kl_threshold
        self.lr_min = cfg.lr_adaptive_min
        self.lr_max = cfg.lr_adaptive_max
        self._epoch_kls: list[Tensor] = []

    def _apply(self, kl: Tensor) -> None:
        if self.reduce_kl is not None:
            kl = self.reduce_kl(kl.detach())
        self.lr = kl_adaptive_lr(self.lr, float(kl), self.kl_threshold, self.lr_min, self.lr_max)

    def after_minibatch(self, kl: Tensor | None) -> None:
        if kl is None:
            raise ValueError("a kl_adaptive lr schedule needs the minibatch's KL divergence after every step")
        if self.per_epoch:
            self._epoch_kls.append(kl.detach())  # read once per epoch: one GPU sync instead of one per step
        else:
            self._apply(kl)

    def after_epoch(self) -> None:
        if self.per_epoch and self._epoch_kls:
            mean_kl = sum(self._epoch_kls) / len(self._epoch_kls)
            self._epoch_kls.clear()
            self._apply(mean_kl)


def linear_decay_updates(cfg: Config, world_size: int = 1) -> int:
    """Minibatch updates over which ``linear_decay`` reaches 0: ``train_for_env_steps // batch_size * num_epochs``
    (``batch_size * world_size`` samples per update across the ranks of a distributed run)."""
    return int(cfg.train_for_env_steps) // (int(cfg.batch_size) * world_size) * int(cfg.num_epochs)


class LinearDecayLrSchedule(ConstantLrSchedule):
    """``linear_decay``: ``initial_lr * (1 - num_updates / total_updates)``, never below 0 (module docstring).

    The update count is saved in checkpoints, so a resumed run continues the line where it stopped; the horizon is
    recomputed from the resumed run's config, so a longer ``--train_for_env_steps`` stretches what is left of it.
    A new ``--learning_rate`` from PBT rescales the line (same progress, new starting rate).
    """

    def __init__(self, cfg: Config, world_size: int = 1) -> None:
        super().__init__(cfg.learning_rate)
        self.initial_lr = float(cfg.learning_rate)
        self.total_updates = linear_decay_updates(cfg, world_size)
        self.num_updates = 0
        self._update_lr()

    def _update_lr(self) -> None:
        if self.total_updates <= 0:  # a run shorter than one minibatch: nothing to anneal over
            self.lr = 0.0
            return
        self.lr = self.initial_lr * max(0.0, 1.0 - self.num_updates / self.total_updates)

    def after_minibatch(self, kl: Tensor | None) -> None:
        self.num_updates += 1
        self._update_lr()

    def set_learning_rate(self, lr: float) -> None:
        self.initial_lr = float(lr)
        self._update_lr()

    def state_dict(self) -> dict[str, float]:
        return {"lr": self.lr, "initial_lr": self.initial_lr, "num_updates": self.num_updates}

    def load_state_dict(self, state: dict[str, float]) -> None:
        """Restore the line's start and progress; a state of another schedule (only ``lr``) starts the line anew."""
        self.initial_lr = float(state.get("initial_lr", self.initial_lr))
        self.num_updates = int(state.get("num_updates", 0))
        self._update_lr()


LrSchedule = ConstantLrSchedule | KlAdaptiveLrSchedule | LinearDecayLrSchedule
LR_SCHEDULES = ("constant", "kl_adaptive_minibatch", "kl_adaptive_epoch", "linear_decay")


def make_lr_schedule(
    cfg: Config, world_size: int = 1, reduce_kl: Callable[[Tensor], Tensor] | None = None
) -> LrSchedule:
    """The schedule named by ``--lr_schedule``, starting at ``--learning_rate`` (``world_size``: ranks that share
    each SGD step; ``reduce_kl``: how a KL-adaptive rule turns the local KL into the ranks' one)."""
    if cfg.lr_schedule == "constant":
        return ConstantLrSchedule(cfg.learning_rate)
    if cfg.lr_schedule in ("kl_adaptive_minibatch", "kl_adaptive_epoch"):
        return KlAdaptiveLrSchedule(cfg, per_epoch=cfg.lr_schedule == "kl_adaptive_epoch", reduce_kl=reduce_kl)
    if cfg.lr_schedule == "linear_decay":
        return LinearDecayLrSchedule(cfg, world_size)
    raise ValueError(f"--lr_schedule={cfg.lr_schedule!r} is not supported: use one of {', '.join(LR_SCHEDULES)}")
