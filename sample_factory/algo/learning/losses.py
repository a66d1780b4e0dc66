"""The PPO/APPO loss terms, each a masked mean over the valid samples of a minibatch.

Every function takes ``valids`` ([B] bool) and averages over the valid samples only (``masked_mean``), so an
invalid sample (inactive agent, stale policy) contributes neither to the value nor to the gradient. Formulas follow
Schulman et al. 2017 (PPO) with the symmetric ratio range of Sample Factory's APPO: the ratio is clipped to
``[1 / (1 + clip_ratio), 1 + clip_ratio]``, which bounds ``log(ratio)`` symmetrically around 0.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from sample_factory.algo.utils.action_distributions import ActionDistribution
from sample_factory.algo.utils.torch_utils import masked_mean

# Hard bounds on the importance ratio: far outside the PPO clip range the gradient is zero anyway, and clamping in
# log space keeps exp() finite when the stored log-probs are far from the current ones (very stale data).
RATIO_MIN, RATIO_MAX = 0.05, 20.0
# Advantages are divided by (std + ADV_STD_EPS): with near-constant advantages float noise must not blow up.
ADV_STD_EPS = 1e-5


def importance_ratios(log_probs: Tensor, old_log_probs: Tensor) -> Tensor:
    """``pi(a|s) / mu(a|s)`` ([B]) from log-probs, clamped to ``[RATIO_MIN, RATIO_MAX]``."""
    log_ratio = (log_probs - old_log_probs).clamp(math.log(RATIO_MIN), math.log(RATIO_MAX))
    return torch.exp(log_ratio)


def masked_mean_std(x: Tensor, valids: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and population std of ``x`` ([B]) over the valid samples."""
    mean = masked_mean(x, valids)
    std = masked_mean((x - mean).square(), valids).sqrt()
    return mean, std


def normalize_advantages(advantages: Tensor, valids: Tensor) -> Tensor:
    """Advantages standardised with the statistics of the minibatch's valid samples (invalid ones ignored)."""
    mean, std = masked_mean_std(advantages, valids)
    return (advantages - mean) / (std + ADV_STD_EPS)


def ppo_policy_loss(ratios: Tensor, advantages: Tensor, valids: Tensor, clip_ratio: float) -> Tensor:
    """Clipped surrogate ``-E[min(r * A, clip(r, 1 / (1 + eps), 1 + eps) * A)]`` with ``eps = clip_ratio``."""
    clipped_ratios = ratios.clamp(1.0 / (1.0 + clip_ratio), 1.0 + clip_ratio)
    surrogate = torch.min(ratios * advantages, clipped_ratios * advantages)  # [B]
    return -masked_mean(surrogate, valids)


def clip_fraction(ratios: Tensor, valids: Tensor, clip_ratio: float) -> Tensor:
    """Fraction of valid samples whose ratio lies outside the PPO clip range (no gradient from the clipped term)."""
    outside = (ratios < 1.0 / (1.0 + clip_ratio)) | (ratios > 1.0 + clip_ratio)
    return masked_mean(outside.float(), valids)


def clipped_value_loss(
    values: Tensor, old_values: Tensor, targets: Tensor, valids: Tensor, clip_value: float
) -> Tensor:
    """``E[max((V - R)^2, (V_clip - R)^2)]`` with ``V_clip = V_old + clip(V - V_old, -c, c)``, ``c = clip_value``.

    Taking the larger error means a step cannot profit from moving the value further than ``c`` from the value the
    behaviour policy predicted, the value-side counterpart of the policy clipping. All inputs are [B].
    """
    clipped_values = old_values + (values - old_values).clamp(-clip_value, clip_value)
    squared_errors = torch.max((values - targets).square(), (clipped_values - targets).square())
    return masked_mean(squared_errors, valids)


def exploration_loss(distribution: ActionDistribution, valids: Tensor, kind: str) -> Tensor:
    """``--exploration_loss``: ``entropy`` gives ``-E[H(pi)]``; ``symmetric_kl`` gives ``E[KL(u||pi) + KL(pi||u)]``.

    Both are minimised by a more random policy; symmetric KL to the uniform prior grows without bound as the
    policy becomes deterministic, so it resists collapse harder than entropy (which is bounded by 0).
    """
    if kind == "entropy":
        return -masked_mean(distribution.entropy(), valids)
    if kind == "symmetric_kl":
        return masked_mean(distribution.symmetric_kl_with_uniform_prior(), valids)
    raise ValueError(f"--exploration_loss={kind!r} is not supported: use entropy or symmetric_kl")
