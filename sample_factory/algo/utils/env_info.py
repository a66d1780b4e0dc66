"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.envs.env_info`.

Added here: Sample Factory 2's helpers around the env-info cache (``--use_env_info_cache``) and the entry point of
a child process that reads the env info.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from sample_factory.algo.utils.context import SampleFactoryContext, set_global_context
from sample_factory.envs.env_info import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    ENV_INFO_PROTOCOL_VERSION,
    SEPARATE_PROCESS_TIMEOUT_S,
    EnvInfo,
    EnvInfoProcessError,
    action_splits_of,
    env_attribute,
    extract_env_info,
    get_multiagent_info,
    is_multiagent_env,
    obtain_env_info,
    obtain_env_info_in_a_separate_process,
)
from sample_factory.utils.paths import experiment_dir
from sample_factory.utils.typing import Config

# the file in the experiment folder that --use_env_info_cache reads and writes
ENV_INFO_CACHE_FILE = "env_info.pkl"


def env_info_cache_filename(cfg: Config) -> str:
    """Where ``--use_env_info_cache`` keeps the env info of this experiment."""
    return os.path.join(experiment_dir(cfg, mkdir=False), ENV_INFO_CACHE_FILE)


def _differences(expected: EnvInfo, found: EnvInfo) -> list[str]:
    return [
        f"{field.name}: {getattr(expected, field.name)!r} != {getattr(found, field.name)!r}"
        for field in dataclasses.fields(EnvInfo)
        if getattr(expected, field.name) != getattr(found, field.name)
    ]


def check_env_info(env: Any, env_info: EnvInfo, cfg: Config) -> None:
    """Check that ``env`` (a freshly created env) has the spaces and agents ``env_info`` describes.

    ``env_info`` usually comes from the cache of an earlier run; when the env has changed since, the cache file is
    deleted (the next run rebuilds it) and ``ValueError`` names every field that differs.
    """
    differences = _differences(env_info, extract_env_info(env, cfg))
    if not differences:
        return
    cache = env_info_cache_filename(cfg)
    removed = False
    if os.path.isfile(cache):
        os.remove(cache)
        removed = True
    raise ValueError(
        f"env {cfg.env} no longer matches its env info ({'; '.join(differences)}). "
        + (f"The stale cache {cache} was deleted: " if removed else "")
        + "restart the experiment, or run without --use_env_info_cache"
    )


def spawn_tmp_env_and_get_info(sf_context: SampleFactoryContext, res_queue: Any, cfg: Config) -> None:
    """Entry point of a child process: install the parent's registries (``sf_context``), create one env, put its
    ``EnvInfo`` on ``res_queue`` and close the env.

    An error is raised in the child (and ends it) without putting anything, so wait on the queue with a timeout;
    :func:`obtain_env_info_in_a_separate_process` does all of this and raises the child's error in the caller.
    """
    set_global_context(sf_context)
    res_queue.put(obtain_env_info(cfg))
