"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.envs.make_env`."""

from sample_factory.envs.make_env import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    BatchedVecEnv,
    SequentialVectorizeWrapper,
    is_natively_vectorized,
    make_env_func_batched,
)
