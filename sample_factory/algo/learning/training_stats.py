"""What a training call reports: the last epoch's per-minibatch stats reduced, and batch-level stats (policy lag).

The per-sample values of the last epoch's minibatches (``ReportedSamples``) are averaged for all minibatches at once
at its end, not with a dozen operations per SGD step, and everything is turned into numbers with one device sync.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from sample_factory.algo.learning.losses import clip_fraction
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.torch_utils import ValidMean

# Stats reduced by min / max over the minibatches of the last epoch; every other stat is averaged.
_MIN_STATS, _MAX_STATS = ("adv_min",), ("adv_max",)


@dataclass
class ReportedSamples:
    """What the reported stats average over one last-epoch minibatch: per-sample values ([B], no gradient), reduced
    for the whole epoch at once at its end (``reported_stats``), not with a dozen operations per step."""

    policy_terms: Tensor
    value_terms: Tensor
    explore_terms: Tensor | None
    entropy: Tensor
    values: Tensor
    advantages: Tensor  # reward units, as the learner trained on them (GAE or V-trace)
    ratios: Tensor


def reported_stats(
    reported: list[ReportedSamples], valid_means: list[ValidMean], clip_ratio: float
) -> dict[str, Tensor]:
    """The per-sample stats of the last epoch's M minibatches averaged per minibatch ([M] each), all at once."""
    weights = torch.stack([valid_mean.weights for valid_mean in valid_means])  # [M, B]
    inv_counts = torch.stack([valid_mean.inv_count for valid_mean in valid_means])  # [M]

    def rows(name: str) -> Tensor:  # [M, B]
        return torch.stack([getattr(samples, name) for samples in reported])

    def means(x: Tensor) -> Tensor:  # [M]: each minibatch's mean over its valid samples
        return (x * weights).sum(dim=1) * inv_counts

    advantages, ratios = rows("advantages"), rows("ratios")
    adv_mean = means(advantages)
    adv_std = means((advantages - adv_mean.unsqueeze(1)).square()).sqrt()
    advantages_or_mean = torch.where(weights > 0, advantages, adv_mean.unsqueeze(1))  # invalid: no extremes
    explore = torch.zeros_like(adv_mean) if reported[0].explore_terms is None else means(rows("explore_terms"))
    return dict(
        policy_loss=means(rows("policy_terms")), value_loss=means(rows("value_terms")), exploration_loss=explore,
        entropy=means(rows("entropy")), values=means(rows("values")), adv_mean=adv_mean, adv_std=adv_std,
        adv_min=advantages_or_mean.amin(dim=1), adv_max=advantages_or_mean.amax(dim=1),
        clip_fraction=clip_fraction(ratios, means, clip_ratio), ratio_mean=means(ratios),
    )  # fmt: skip


def summarize(columns: dict[str, Tensor], batch: TensorDict, version_at_start: int) -> dict[str, float]:
    """Minibatch stats reduced over the last epoch plus batch-level stats, as numbers; one device sync in total."""
    reduced: dict[str, Tensor] = {}
    for key, column in columns.items():  # [M]: one value per minibatch of the last epoch
        column = column.float()
        reduced[key] = column.min() if key in _MIN_STATS else column.max() if key in _MAX_STATS else column.mean()
    valids, discarded = batch["valids"], batch["discarded"]
    collected = valids | discarded  # steps of active agents, stale or not
    version_diff = (version_at_start - batch["policy_version"][collected]).float()
    reduced.update(
        version_diff_avg=version_diff.mean(), version_diff_min=version_diff.min(),
        version_diff_max=version_diff.max(), fraction_invalid=1.0 - valids.float().mean(),
        num_invalids=(~valids).sum().float(), num_discarded=discarded.sum().float(),
    )  # fmt: skip
    return dict(zip(reduced.keys(), torch.stack(list(reduced.values())).tolist(), strict=True))
