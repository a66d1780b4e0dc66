"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.model.running_mean_std`."""

from sample_factory.model.running_mean_std import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    DEFAULT_CLIP,
    DEFAULT_EPSILON,
    LARGE_SAMPLE_NUMEL,
    RunningMeanStdDictInPlace,
    RunningMeanStdInPlace,
)
