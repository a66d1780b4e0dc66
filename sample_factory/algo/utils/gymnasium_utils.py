"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.envs.gymnasium_utils`."""

from sample_factory.envs.gymnasium_utils import (
    convert_space,
)

__all__ = [
    "convert_space",
]
