"""Sample Factory 2's module path for the small shared constants; they live in :mod:`sample_factory.utils.misc`."""

from sample_factory.utils.misc import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    EPISODIC,
    EPS,
    ExperimentStatus,
    memory_stats,
)
