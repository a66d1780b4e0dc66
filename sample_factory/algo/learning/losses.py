"""The PPO/APPO loss terms, per sample, and the mean over the valid samples of a minibatch that combines them.

Each term function returns one value per sample (``[B]``) and its derivative with respect to the term's
differentiable input; :func:`ppo_loss` adds the weighted terms sample by sample, averages once with
``torch_utils.ValidMean`` (an invalid sample, inactive agent or stale policy, contributes neither to the value nor to
the gradient) and is one autograd node whose backward multiplies those derivatives by the sample weights. On small
networks every tensor operation, and every backward node, is a measurable share of an SGD step.

Formulas follow Schulman et al. 2017 (PPO) with the symmetric ratio range of Sample Factory's APPO: the ratio is
clipped to ``[1 / (1 + clip_ratio), 1 + clip_ratio]``, which bounds ``log(ratio)`` symmetrically around 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from sample_factory.model.action_distributions import ActionDistribution
from sample_factory.utils.torch_utils import ValidMean

# Hard bounds on the importance ratio: far outside the PPO clip range the gradient is zero anyway, and clamping in
# log space keeps exp() finite when the stored log-probs are far from the current ones (very stale data).
RATIO_MIN, RATIO_MAX = 0.05, 20.0
# Advantages are divided by (std + ADV_STD_EPS): with near-constant advantages float noise must not blow up.
ADV_STD_EPS = 1e-5


LOG_RATIO_MIN, LOG_RATIO_MAX = math.log(RATIO_MIN), math.log(RATIO_MAX)


def importance_ratios(log_probs: Tensor, old_log_probs: Tensor) -> tuple[Tensor, Tensor]:
    """``pi(a|s) / mu(a|s)`` ([B]) from log-probs, clamped to ``[RATIO_MIN, RATIO_MAX]``, and its derivative with
    respect to ``log_probs`` (the ratio itself inside the bounds, 0 where the clamp holds it)."""
    log_ratio = log_probs - old_log_probs
    inside = (log_ratio >= LOG_RATIO_MIN) & (log_ratio <= LOG_RATIO_MAX)
    ratios = log_ratio.clamp(LOG_RATIO_MIN, LOG_RATIO_MAX).exp()
    return ratios, ratios * inside


def mean_std(x: Tensor, valid_mean: ValidMean) -> tuple[Tensor, Tensor]:
    """Mean and population std of ``x`` ([B]) over the valid samples."""
    mean = valid_mean(x)
    std = valid_mean((x - mean).square()).sqrt()
    return mean, std


def normalize_advantages(advantages: Tensor, valid_mean: ValidMean) -> Tensor:
    """Advantages standardised with the statistics of the minibatch's valid samples (invalid ones ignored)."""
    mean, std = mean_std(advantages, valid_mean)
    return (advantages - mean) / (std + ADV_STD_EPS)


def standardize_rows(x: Tensor, weights: Tensor, inv_counts: Tensor) -> Tensor:
    """:func:`normalize_advantages` for M minibatches at once: ``x`` and ``weights`` (0/1) are [M, B], ``inv_counts``
    [M] (see ``ValidMean.rows``); each row is standardised with the statistics of its own valid samples."""
    inv = inv_counts.unsqueeze(1)
    centered = x - (x * weights).sum(dim=1, keepdim=True) * inv
    std = ((centered.square() * weights).sum(dim=1, keepdim=True) * inv).sqrt_()
    return centered / std.add_(ADV_STD_EPS)


def ppo_policy_terms(ratios: Tensor, advantages: Tensor, clip_ratio: float) -> tuple[Tensor, Tensor]:
    """Clipped surrogate loss per sample ``-min(r * A, clip(r, 1 / (1 + eps), 1 + eps) * A)``, ``eps = clip_ratio``,
    and its derivative with respect to ``r``: ``-A`` where the unclipped product is the minimum, else 0.

    Where both products are equal (``r`` inside the clip range) the derivative is ``-A``, as autograd gives it: half
    through each branch of the minimum, and the clamp passes its half on inside its range.
    """
    unclipped = ratios * advantages
    clipped = ratios.clamp(1.0 / (1.0 + clip_ratio), 1.0 + clip_ratio) * advantages
    d_ratio = advantages.neg() * (unclipped <= clipped)
    return torch.minimum(unclipped, clipped).neg_(), d_ratio  # [B], [B]


def clip_fraction(ratios: Tensor, valid_mean: Callable[[Tensor], Tensor], clip_ratio: float) -> Tensor:
    """Fraction of valid samples whose ratio lies outside the PPO clip range (no gradient from the clipped term);
    ``valid_mean`` averages over the valid samples (a ``ValidMean``, or one that averages each row of a matrix)."""
    outside = (ratios < 1.0 / (1.0 + clip_ratio)) | (ratios > 1.0 + clip_ratio)
    return valid_mean(outside.float())


def clipped_value_terms(
    values: Tensor, old_values: Tensor, targets: Tensor, clip_value: float
) -> tuple[Tensor, Tensor]:
    """``max((V - R)^2, (V_clip - R)^2)`` per sample; ``V_clip = V_old + clip(V - V_old, -c, c)``, ``c = clip_value``;
    and its derivative with respect to ``V``.

    Taking the larger error means a step cannot profit from moving the value further than ``c`` from the value the
    behaviour policy predicted, the value-side counterpart of the policy clipping. All inputs are [B]. The derivative
    is ``2 (V - R)`` where the unclipped error is the larger one (inside the clip range both are the same), else
    ``2 (V_clip - R)`` times the clamp's own derivative (0 outside the range). The two squared errors are equal
    outside the range only on a set of measure zero; there the unclipped branch takes the whole gradient, where
    autograd would give it half.
    """
    delta = values - old_values
    inside = delta.abs() <= clip_value
    error = values - targets
    clipped_error = delta.clamp(-clip_value, clip_value).add_(old_values).sub_(targets)
    squared, clipped_squared = error.square(), clipped_error.square()
    d_values = torch.where(squared >= clipped_squared, error, clipped_error * inside).mul_(2.0)
    return torch.maximum(squared, clipped_squared), d_values  # [B], [B]


class PPOLoss(NamedTuple):
    """The minibatch loss (differentiable) and the per-sample terms the stats report (no gradient)."""

    loss: Tensor  # scalar
    policy_terms: Tensor  # [B]
    value_terms: Tensor  # [B], value_loss_coeff included
    ratios: Tensor  # [B] importance ratios


class PPOLossInputs(NamedTuple):
    """What the loss compares the current policy's outputs with: the minibatch as collected, and the clip ranges.

    None of it gets a gradient. ``std_advantages`` are standardised over the minibatch's valid samples
    (:func:`normalize_advantages`, or :func:`standardize_rows` for all minibatches of an epoch at once); ``targets``
    are in the returns normaliser's space, like the values.
    """

    old_log_probs: Tensor  # [B] log-probs of the actions under the behaviour policy
    std_advantages: Tensor  # [B]
    old_values: Tensor  # [B] value estimates at collection time
    targets: Tensor  # [B] value targets
    valid_mean: ValidMean
    clip_ratio: float
    clip_value: float
    value_coeff: float


def ppo_loss(log_probs: Tensor, values: Tensor, extra_terms: Tensor | None, inputs: PPOLossInputs) -> PPOLoss:
    """Mean over the valid samples of ``policy_terms + value_coeff * value_terms + extra_terms``, in one autograd node.

    ``log_probs`` and ``values`` ([B]) come from the current policy; ``extra_terms`` ([B] or None: the exploration
    terms, their coefficient included) are added as they are.

    Why one node: written with autograd, these few dozen elementwise operations on [B] vectors record as many backward
    nodes (clamps, minimum, maximum, their masks), and on small networks each costs as much as a layer's matrix
    product. Here the forward computes each term's derivative alongside it (the functions above) and the backward is
    three multiplications: with 16 SGD steps of 256 samples on CartPole's 64x64 MLP it takes about 5 % off a training
    call (one CPU thread).
    """
    return PPOLoss(*_FusedPPOLoss.apply(log_probs, values, extra_terms, inputs))


def ppo_loss_autograd(log_probs: Tensor, values: Tensor, extra_terms: Tensor | None, inputs: PPOLossInputs) -> PPOLoss:
    """:func:`ppo_loss` with every operation recorded by autograd: the plain path, for a model whose outputs the fused
    node's start-up check did not accept (``learner_fast_paths``). Same arguments, same formulas, same result."""
    x = inputs
    ratios = (log_probs - x.old_log_probs).clamp(LOG_RATIO_MIN, LOG_RATIO_MAX).exp()
    clipped_ratios = ratios.clamp(1.0 / (1.0 + x.clip_ratio), 1.0 + x.clip_ratio)
    policy_terms = -torch.min(ratios * x.std_advantages, clipped_ratios * x.std_advantages)
    clipped_values = x.old_values + (values - x.old_values).clamp(-x.clip_value, x.clip_value)
    value_terms = x.value_coeff * torch.max((values - x.targets).square(), (clipped_values - x.targets).square())
    terms = policy_terms + value_terms
    if extra_terms is not None:
        terms = terms + extra_terms
    return PPOLoss(x.valid_mean(terms), policy_terms.detach(), value_terms.detach(), ratios.detach())


class _FusedPPOLoss(torch.autograd.Function):
    """Forward and hand-derived backward of :func:`ppo_loss` (gradients for log_probs, values and extra_terms)."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, log_probs: Tensor, values: Tensor, extra_terms: Tensor | None, inputs: PPOLossInputs
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        x = inputs
        ratios, d_ratio = importance_ratios(log_probs, x.old_log_probs)
        policy_terms, d_policy = ppo_policy_terms(ratios, x.std_advantages, x.clip_ratio)
        value_terms, d_values = clipped_value_terms(values, x.old_values, x.targets, x.clip_value)
        value_terms.mul_(x.value_coeff)
        terms = policy_terms + value_terms
        if extra_terms is not None:
            terms.add_(extra_terms)
        ctx.mark_non_differentiable(policy_terms, value_terms, ratios)
        # d loss / d input = (weight / count) * d term / d input; the weights are applied in backward
        ctx.d_log_probs = d_policy.mul_(d_ratio)
        ctx.d_values = d_values.mul_(x.value_coeff)
        ctx.valid_mean = x.valid_mean
        ctx.has_extra = extra_terms is not None
        return x.valid_mean(terms), policy_terms, value_terms, ratios

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_loss: Tensor, *_unused: Tensor) -> tuple[Tensor | None, ...]:
        valid_mean = ctx.valid_mean
        per_sample = valid_mean.weights * (grad_loss * valid_mean.inv_count)  # [B]
        grad_extra = per_sample if ctx.has_extra else None
        return ctx.d_log_probs * per_sample, ctx.d_values * per_sample, grad_extra, None


def exploration_terms(distribution: ActionDistribution, kind: str) -> Tensor:
    """``--exploration_loss`` per sample: ``entropy`` gives ``-H(pi)``; ``symmetric_kl`` ``KL(u||pi) + KL(pi||u)``.

    Both are minimised by a more random policy; symmetric KL to the uniform prior grows without bound as the
    policy becomes deterministic, so it resists collapse harder than entropy (which is bounded by 0).
    """
    if kind == "entropy":
        return -distribution.entropy()
    if kind == "symmetric_kl":
        return distribution.symmetric_kl_with_uniform_prior()
    raise ValueError(f"--exploration_loss={kind!r} is not supported: use entropy or symmetric_kl")
