"""LAMB: Adam steps rescaled per parameter tensor by a trust ratio (You et al. 2019, "Large Batch Optimization for
Deep Learning: Training BERT in 76 minutes"), optionally wrapped in Lookahead (Zhang et al. 2019).

Per parameter tensor ``w`` with gradient ``g``, at step ``t``:

- ``m = beta1 * m + (1 - beta1) * g`` and ``v = beta2 * v + (1 - beta2) * g**2`` (Adam's moments; with
  ``bias_correction`` divided by ``1 - beta1**t`` and ``1 - beta2**t`` before use)
- ``u = m / (sqrt(v) + eps) + weight_decay * w`` (the Adam direction plus decoupled weight decay)
- ``r = max(||w|| / ||u||, min_trust)``, or 1 when either norm is zero (a fresh zero tensor, a zero update)
- ``w = w - lr * r * u``

The trust ratio makes each layer's step proportional to the layer's own scale, which keeps very large batches
(large learning rates) stable. ``min_trust`` keeps layers with tiny weights from freezing.

Lookahead (``use_look_ahead``) keeps a slow copy of the weights; every ``look_ahead_k`` steps the slow copy moves
``look_ahead_alpha`` of the way to the fast weights and the fast weights restart from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor
from torch.optim import Optimizer

__all__ = ["Lamb"]


class Lamb(Optimizer):
    """The LAMB optimiser with optional Lookahead; see the module docstring for the update.

    Args:
        params: parameters (or parameter groups) to optimise.
        bias_correction: divide Adam's moments by ``1 - beta**t`` (the usual Adam correction of early steps).
        lr: learning rate.
        betas: decay rates of the first and second moment estimates.
        eps: added to ``sqrt(v)`` for numerical stability.
        weight_decay: decoupled weight decay, added to the update before the trust ratio.
        min_trust: lower bound of the trust ratio.
        use_look_ahead: wrap the steps in Lookahead.
        look_ahead_alpha: how far the slow weights move towards the fast ones at each synchronisation, in (0, 1].
        look_ahead_k: fast steps between two synchronisations.
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        bias_correction: bool = True,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        min_trust: float = 0.01,
        use_look_ahead: bool = False,
        look_ahead_alpha: float = 0.5,
        look_ahead_k: int = 10,
    ) -> None:
        _check_hyperparameters(lr, betas, eps, weight_decay, min_trust, look_ahead_alpha, look_ahead_k)
        defaults = dict(
            bias_correction=bias_correction,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            min_trust=min_trust,
        )
        # set before the base class adds the parameter groups: add_param_group reads them
        self.use_look_ahead = use_look_ahead
        self.look_ahead_alpha = look_ahead_alpha
        self.look_ahead_k = look_ahead_k
        self.fast_steps = 0
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One LAMB step on every parameter with a gradient (then a Lookahead synchronisation when one is due)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    self._update(param, group)
        self.fast_steps += 1
        if self.use_look_ahead and self.fast_steps % self.look_ahead_k == 0:
            self._synchronise_slow_weights()
        return loss

    def _update(self, param: Tensor, group: dict) -> None:
        grad = param.grad
        if grad.is_sparse:
            raise RuntimeError("Lamb takes dense gradients only: use a dense embedding, or torch.optim.SparseAdam")
        state = self.state[param]
        if "step" not in state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(param)
            state["exp_avg_sq"] = torch.zeros_like(param)
        beta1, beta2 = group["betas"]
        state["step"] += 1
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1.0 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
        m, v = exp_avg, exp_avg_sq
        if group["bias_correction"]:
            m = m / (1.0 - beta1 ** state["step"])
            v = v / (1.0 - beta2 ** state["step"])
        update = m / (v.sqrt() + group["eps"])
        if group["weight_decay"] != 0.0:
            update = update + group["weight_decay"] * param
        param.sub_(group["lr"] * _trust_ratio(param, update, group["min_trust"]) * update)

    def _synchronise_slow_weights(self) -> None:
        for group in self.param_groups:
            for param in group["params"]:
                slow = self.state[param]["slow_weights"]
                slow.add_(param - slow, alpha=self.look_ahead_alpha)
                param.copy_(slow)

    def add_param_group(self, param_group: dict) -> None:
        """As ``Optimizer.add_param_group``; with Lookahead the slow weights start as a copy of the new parameters."""
        super().add_param_group(param_group)
        if self.use_look_ahead:
            for param in self.param_groups[-1]["params"]:
                self.state[param]["slow_weights"] = param.detach().clone()


def _trust_ratio(param: Tensor, update: Tensor, min_trust: float) -> Tensor:
    """``max(||w|| / ||u||, min_trust)``, 1 where a norm is zero; a 0-d tensor, so a GPU step never waits for it."""
    weight_norm, update_norm = param.norm(), update.norm()
    usable = (weight_norm > 0) & (update_norm > 0)
    ratio = (weight_norm / torch.where(usable, update_norm, torch.ones_like(update_norm))).clamp(min=min_trust)
    return torch.where(usable, ratio, torch.ones_like(ratio))


def _check_hyperparameters(
    lr: float,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
    min_trust: float,
    look_ahead_alpha: float,
    look_ahead_k: int,
) -> None:
    problems = []
    if lr < 0.0:
        problems.append(f"lr={lr} must be >= 0")
    if not all(0.0 <= beta < 1.0 for beta in betas):
        problems.append(f"betas={betas} must both be in [0, 1)")
    if eps < 0.0 or weight_decay < 0.0 or min_trust < 0.0:
        problems.append(f"eps={eps}, weight_decay={weight_decay} and min_trust={min_trust} must be >= 0")
    if not 0.0 < look_ahead_alpha <= 1.0 or look_ahead_k < 1:
        problems.append(f"look_ahead_alpha={look_ahead_alpha} must be in (0, 1] and look_ahead_k={look_ahead_k} >= 1")
    if problems:
        raise ValueError("Lamb: " + "; ".join(problems))
