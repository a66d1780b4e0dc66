"""The minibatches of one epoch of SGD: views of the prepared batch, weighed once for the whole epoch.

Consecutive slices of ``--batch_size`` samples, or (``--shuffle_minibatches``) random whole ``recurrence``-long
segments, so BPTT always sees complete segments. Each minibatch comes with its ``ValidMean`` and, with GAE, its
advantages standardised over its valid samples, all computed for every minibatch at once: a few tensor operations
instead of a dozen per SGD step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from sample_factory.algo.learning.losses import standardize_rows
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.torch_utils import ValidMean
from sample_factory.utils.typing import Config


@dataclass
class Minibatch:
    """One SGD step's samples (views of the batch), their ``ValidMean`` and, with GAE, their standardised advantages
    (None with V-trace, whose advantages depend on the current policy)."""

    data: TensorDict
    valid_mean: ValidMean
    std_advantages: Tensor | None


def epoch_minibatches(batch: TensorDict, cfg: Config, recurrence: int, device: torch.device) -> list[Minibatch]:
    """The minibatches of one epoch: views of ``batch``, each with its ``ValidMean`` and (GAE) its standardised
    advantages (V-trace advantages depend on the current policy: they are standardised per step by the learner)."""
    indices = minibatch_indices(batch["valids"].shape[0], cfg, recurrence, device)
    rows = torch.stack(indices) if cfg.shuffle_minibatches else None  # [M, bs] sample indices

    def per_minibatch(x: Tensor) -> Tensor:  # [M, bs]
        return x[rows] if rows is not None else x.view(len(indices), -1)

    valid_means, weights, inv_counts = ValidMean.rows(per_minibatch(batch["valids"]))
    std_advantages = None
    if not cfg.with_vtrace:
        std_advantages = standardize_rows(per_minibatch(batch["advantages"]), weights, inv_counts)
    return [
        Minibatch(batch[idx], valid_means[m], None if std_advantages is None else std_advantages[m])
        for m, idx in enumerate(indices)
    ]


def minibatch_indices(num_samples: int, cfg: Config, recurrence: int, device: torch.device) -> list[slice | Tensor]:
    """Sample indices of each minibatch: consecutive slices, or random whole ``recurrence``-long segments."""
    batch_size = cfg.batch_size
    if num_samples % batch_size:
        raise ValueError(f"the batch has {num_samples} samples, not a multiple of --batch_size={batch_size}")
    num_minibatches = num_samples // batch_size
    if not cfg.shuffle_minibatches:
        return [slice(i * batch_size, (i + 1) * batch_size) for i in range(num_minibatches)]
    num_segments = num_samples // recurrence
    segments = torch.randperm(num_segments, device=device).view(num_minibatches, -1)  # [M, bs/R]
    steps = torch.arange(recurrence, device=device)
    return list((segments.unsqueeze(-1) * recurrence + steps).flatten(1))  # M x [bs]
