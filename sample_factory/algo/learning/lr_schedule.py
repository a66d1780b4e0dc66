"""Learning-rate schedules (``--lr_schedule``): constant, or adapted to the policy's KL divergence.

The KL-adaptive rule keeps each update's step in policy space near a target, the idea behind the adaptive KL
penalty of the PPO paper applied to the learning rate instead. With ``k`` the measured KL(old || new) and ``thr``
= ``--lr_schedule_kl_threshold``:

- ``k > 2 * thr``: the policy moved too far, ``lr <- max(lr / 1.5, --lr_adaptive_min)``;
- ``k < thr / 2``: it barely moved, ``lr <- min(lr * 1.5, --lr_adaptive_max)``;
- otherwise ``lr`` is kept.

A move never goes the wrong way: a decrease cannot raise an lr already below ``--lr_adaptive_min`` and an increase
cannot lower one above ``--lr_adaptive_max``. ``kl_adaptive_minibatch`` applies the rule after every SGD step with
that minibatch's KL; ``kl_adaptive_epoch`` once per epoch with the mean KL of the epoch's minibatches.
"""

from __future__ import annotations

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

    def after_minibatch(self, kl: Tensor) -> None:
        """Called after every SGD step with that minibatch's mean KL (a tensor: reading it may sync the GPU)."""

    def after_epoch(self) -> None:
        """Called after every epoch."""

    def state_dict(self) -> dict[str, float]:
        return {"lr": self.lr}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.lr = float(state["lr"])


class KlAdaptiveLrSchedule(ConstantLrSchedule):
    """``kl_adaptive_minibatch`` / ``kl_adaptive_epoch``: the KL rule of the module docstring."""

    needs_kl = True

    def __init__(self, cfg: Config, per_epoch: bool) -> None:
        super().__init__(cfg.learning_rate)
        self.per_epoch = per_epoch
        self.kl_threshold = cfg.lr_schedule_kl_threshold
        self.lr_min = cfg.lr_adaptive_min
        self.lr_max = cfg.lr_adaptive_max
        self._epoch_kls: list[Tensor] = []

    def _apply(self, kl: float) -> None:
        self.lr = kl_adaptive_lr(self.lr, kl, self.kl_threshold, self.lr_min, self.lr_max)

    def after_minibatch(self, kl: Tensor) -> None:
        if self.per_epoch:
            self._epoch_kls.append(kl.detach())  # read once per epoch: one GPU sync instead of one per step
        else:
            self._apply(float(kl))

    def after_epoch(self) -> None:
        if self.per_epoch and self._epoch_kls:
            mean_kl = sum(self._epoch_kls) / len(self._epoch_kls)
            self._epoch_kls.clear()
            self._apply(float(mean_kl))


LrSchedule = ConstantLrSchedule | KlAdaptiveLrSchedule


def make_lr_schedule(cfg: Config) -> LrSchedule:
    """The schedule named by ``--lr_schedule``, starting at ``--learning_rate``."""
    if cfg.lr_schedule == "constant":
        return ConstantLrSchedule(cfg.learning_rate)
    if cfg.lr_schedule in ("kl_adaptive_minibatch", "kl_adaptive_epoch"):
        return KlAdaptiveLrSchedule(cfg, per_epoch=cfg.lr_schedule == "kl_adaptive_epoch")
    raise ValueError(
        f"--lr_schedule={cfg.lr_schedule!r} is not supported: use constant, kl_adaptive_minibatch or kl_adaptive_epoch"
    )
