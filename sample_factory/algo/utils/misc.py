"""Sample Factory 2's module path for the small shared constants; they live in :mod:`sample_factory.utils.misc`."""

from sample_factory.utils.misc import EPISODIC, EPS, ExperimentStatus, memory_stats

__all__ = ["EPISODIC", "EPS", "ExperimentStatus", "memory_stats"]
