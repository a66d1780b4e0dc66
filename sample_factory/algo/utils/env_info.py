"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.envs.env_info`."""

from sample_factory.envs.env_info import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    ENV_INFO_PROTOCOL_VERSION,
    SEPARATE_PROCESS_TIMEOUT_S,
    EnvInfo,
    EnvInfoProcessError,
    action_splits_of,
    extract_env_info,
    is_multiagent_env,
    obtain_env_info,
    obtain_env_info_in_a_separate_process,
)
