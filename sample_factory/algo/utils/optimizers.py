"""Optimisers beyond what ``torch.optim`` ships (``--optimizer=lamb``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor


class Lamb(torch.optim.Optimizer):
    """LAMB: Adam with a layer-wise trust ratio (You et al. 2019, "Large Batch Optimization for Deep Learning").

    Per parameter tensor ``x`` (a "layer"), with Adam moments ``m``, ``v`` and their bias-corrected estimates:

    - ``r = m_hat / (sqrt(v_hat) + eps) + weight_decay * x`` (decoupled weight decay, as in AdamW)
    - ``trust_ratio = phi(||x||) / ||r||`` with ``phi(z) = min(z, max_weight_norm)``; 1 when either norm is 0
    - ``x <- x - lr * trust_ratio * r``

    Scaling every layer's step to be proportional to its weight norm keeps large-batch training stable without
    per-layer learning-rate tuning. ``max_weight_norm`` is the paper's upper clip ``gamma_u`` of ``phi``: without it
    a layer with large weights would take proportionally huge steps.
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        max_weight_norm: float = 10.0,
    ):
        if lr <= 0.0:
            raise ValueError(f"Lamb lr={lr} must be positive")
        if not all(0.0 <= beta < 1.0 for beta in betas):
            raise ValueError(f"Lamb betas={betas} must lie in [0, 1)")
        if eps <= 0.0 or weight_decay < 0.0:
            raise ValueError(f"Lamb eps={eps} must be positive and weight_decay={weight_decay} non-negative")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, max_weight_norm=max_weight_norm)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One LAMB update of every parameter that has a gradient; returns the closure's loss if given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    self._update_param(param, group)
        return loss

    def _update_param(self, param: Tensor, group: dict) -> None:
        if param.grad.is_sparse:
            raise RuntimeError("Lamb does not support sparse gradients")
        state = self.state[param]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(param)
            state["exp_avg_sq"] = torch.zeros_like(param)
        beta1, beta2 = group["betas"]
        state["step"] += 1
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(param.grad, 1.0 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(param.grad, param.grad, value=1.0 - beta2)

        m_hat = exp_avg / (1.0 - beta1 ** state["step"])
        v_hat = exp_avg_sq / (1.0 - beta2 ** state["step"])
        update = m_hat / (v_hat.sqrt() + group["eps"])
        if group["weight_decay"] != 0.0:
            update.add_(param, alpha=group["weight_decay"])

        weight_norm = param.norm().clamp(max=group["max_weight_norm"])
        update_norm = update.norm()
        trust_ratio = torch.where((weight_norm > 0) & (update_norm > 0), weight_norm / update_norm, 1.0)
        param.sub_(update * (group["lr"] * trust_ratio))
