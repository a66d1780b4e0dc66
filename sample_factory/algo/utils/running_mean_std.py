"""Sample Factory 2's module path; the normalisers live in :mod:`sample_factory.model.running_mean_std`.

Added here: ``running_mean_std_summaries``, the scalars that show how the normalisers' statistics evolve.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sample_factory.model.running_mean_std import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    DEFAULT_CLIP,
    DEFAULT_EPSILON,
    LARGE_SAMPLE_NUMEL,
    RunningMeanStdDictInPlace,
    RunningMeanStdInPlace,
)


def running_mean_std_summaries(running_mean_std_module: nn.Module) -> dict[str, Tensor]:
    """The mean of the running means and of the running standard deviations of every normaliser in a module.

    ``running_mean_std_module`` is one normaliser, a dict of them, or a whole model: every
    :class:`RunningMeanStdInPlace` inside is reported as ``{name}_running_mean`` and ``{name}_running_std``, where
    ``name`` is the last part of its path in the module (the observation key for a dict normaliser, e.g. ``obs``;
    ``returns_normalizer`` for a model's returns). Values are 0-d float tensors, averaged over the normalised
    elements; the standard deviation is ``sqrt(running_var)``.
    """
    summaries: dict[str, Tensor] = {}
    for path, module in running_mean_std_module.named_modules():
        if not isinstance(module, RunningMeanStdInPlace):
            continue
        name = path.rsplit(".", 1)[-1] if path else "running_mean_std"
        summaries[f"{name}_running_mean"] = module.running_mean.float().mean()
        summaries[f"{name}_running_std"] = torch.sqrt(module.running_var.float()).mean()
    return summaries
