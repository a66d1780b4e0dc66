"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.envs.make_env`."""

from sample_factory.envs.make_env import (
    BatchedVecEnv,
    SequentialVectorizeWrapper,
    is_natively_vectorized,
    make_env_func_batched,
)

__all__ = [
    "BatchedVecEnv",
    "SequentialVectorizeWrapper",
    "is_natively_vectorized",
    "make_env_func_batched",
]
