"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.envs.spaces.discretized`."""

from sample_factory.envs.spaces.discretized import (
    Discretized,
)

__all__ = [
    "Discretized",
]
