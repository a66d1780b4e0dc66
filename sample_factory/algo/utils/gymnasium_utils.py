"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.envs.gymnasium_utils`."""

from sample_factory.envs.gymnasium_utils import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    convert_space,
    patch_non_gymnasium_env,
)
