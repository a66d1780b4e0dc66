"""Start-up shared by both runners: env info, config file, buffers, initial weights.

The env info normally comes from one env created in the runner's process. With ``--use_env_info_cache`` it is
kept in ``env_info.pkl`` in the experiment folder, so that a resumed run of a slow-starting env (a simulator
that takes a minute to launch) skips that env. The file records the env name and the flags that shape the
spaces in the built-in families; another value of any of them recreates it. Family flags (e.g. a resolution)
are not recorded: the help tells the user to delete the file when the spaces change.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from typing import Any

from sample_factory.algo.runners.components import SharedState
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.sampler_state import SamplerStateExchange, exact_resume_supported
from sample_factory.algo.utils.shared_buffers import (
    PolicyWeights,
    allocate_trajectory_buffers,
    make_slot_owners,
    num_trajectory_slots,
)
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.env_info import obtain_env_info as env_info_from_new_env
from sample_factory.messaging.multiprocessing_utils import get_mp_ctx, get_mp_lock
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.utils.distributed import this_rank
from sample_factory.utils.flags import flag_value
from sample_factory.utils.gpu_utils import weights_buffer_device
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import experiment_dir

ENV_INFO_CACHE_FILE = "env_info.pkl"
ENV_INFO_CACHE_FORMAT = 1
# flags that change the EnvInfo (extract_env_info reads them) or the spaces the built-in families produce
_ENV_INFO_KEY_FLAGS = (
    "env_frameskip",
    "env_framestack",
    "pixel_format",
    "env_gpu_actions",
    "env_gpu_observations",
    "batched_sampling",
)


def obtain_env_info(cfg: Config) -> EnvInfo:
    """The env's spaces and agent count: from ``env_info.pkl`` with ``--use_env_info_cache`` when it matches the run,
    otherwise from one env created in this process (and then written to the cache file for the next run)."""
    path = os.path.join(experiment_dir(cfg), ENV_INFO_CACHE_FILE)
    key = env_info_cache_key(cfg)
    if cfg.use_env_info_cache:
        cached = _read_env_info_cache(path, key)
        if cached is not None:
            log.info("Env info of %s read from %s (--use_env_info_cache): no env created", cfg.env, path)
            return cached
    env_info = env_info_from_new_env(cfg)
    rank = this_rank()
    if rank is None or rank.is_main:  # a distributed run's files are rank 0's
        _write_env_info_cache(path, key, env_info)
    return env_info


def env_info_cache_key(cfg: Config) -> dict[str, Any]:
    """What a cached EnvInfo must have been made with to be reused: the env name and the flags that shape it."""
    return {"env": cfg.env, **{name: flag_value(cfg, name) for name in _ENV_INFO_KEY_FLAGS}}


def _read_env_info_cache(path: str, key: dict[str, Any]) -> EnvInfo | None:
    """The cached EnvInfo, or None (with the reason logged) when there is none or it was made for other settings."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            cached = pickle.load(f)
    except Exception as exc:  # a truncated file or one pickled by an incompatible version: recreate it
        log.warning("Cannot read %s (%s): creating an env to rebuild it", path, exc)
        return None
    if not isinstance(cached, dict) or cached.get("format") != ENV_INFO_CACHE_FORMAT:
        log.info("%s has an older format: creating an env to rebuild it", path)
        return None
    if cached.get("key") != key or not isinstance(cached.get("env_info"), EnvInfo):
        log.info("%s was made for other settings (%s): creating an env to rebuild it", path, cached.get("key"))
        return None
    return cached["env_info"]


def _write_env_info_cache(path: str, key: dict[str, Any], env_info: EnvInfo) -> None:
    """Write through a temporary file and a rename, so a reader never sees half a file."""
    payload = {"format": ENV_INFO_CACHE_FORMAT, "key": key, "env_info": env_info}
    folder = os.path.dirname(path)
    try:
        fd, tmp_path = tempfile.mkstemp(prefix=f".{ENV_INFO_CACHE_FILE}.", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(payload, f)
            os.replace(tmp_path, path)
        except BaseException:
            os.unlink(tmp_path)
            raise
    except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:
        # spaces of some envs do not pickle (e.g. they hold a simulator handle): the run works without the cache
        log.warning("Could not write %s (%s): --use_env_info_cache will create the env every time", path, exc)


def make_shared_state(
    cfg: Config, env_info: EnvInfo, serial: bool, weights: list[PolicyWeights] | None = None
) -> SharedState:
    """Trajectory buffers, their ownership by rollout worker and per-policy weights (fresh unless ``weights`` given)."""
    spaces = PolicySpaces(cfg, env_info)
    num_slots = num_trajectory_slots(cfg, env_info)
    buffers = allocate_trajectory_buffers(cfg, spaces, num_slots, share=not serial)
    log.info("Allocated %d trajectory slots of %d steps (%.1f MB)", num_slots, cfg.rollout, buffers.numel_bytes() / 1e6)
    if spaces.heterogeneous:
        log.info(
            "Agents have %d kinds of spaces: policies %s act for agents %s",
            spaces.num_groups,
            [spaces.policies_of_group(g) for g in range(spaces.num_groups)],
            [[a for a, g in enumerate(spaces.agent_group) if g == group] for group in range(spaces.num_groups)],
        )
    if weights is None:
        weights = initial_policy_weights(cfg, env_info, serial)
    sampler_states = SamplerStateExchange() if serial and exact_resume_supported(cfg) else None
    slot_owners = make_slot_owners(cfg, env_info, num_slots)
    return SharedState(cfg, env_info, buffers, slot_owners, weights, serial, sampler_states)


def initial_policy_weights(cfg: Config, env_info: EnvInfo, serial: bool) -> list[PolicyWeights]:
    """One freshly initialised model's weights per policy; locks fit the mode (none needed in one process).

    Each policy's copy lives where ``weights_buffer_device`` says: on its GPU when the learner and the inference
    workers compute there (made here, before the worker processes start, so they receive it through CUDA IPC),
    otherwise in host shared memory.
    """
    spaces = PolicySpaces(cfg, env_info)
    states = []  # one fresh model per space group: policies with the same spaces start from the same weights
    for group in range(spaces.num_groups):
        group_info = spaces.env_info_of_group(group)
        states.append(create_actor_critic(cfg, group_info.obs_space, group_info.action_space).state_dict())
    return [
        PolicyWeights(states[spaces.policy_group[p]], weights_lock(serial), device=weights_buffer_device(cfg, p))
        for p in range(cfg.num_policies)
    ]


def weights_lock(serial: bool):
    """The lock guarding a PolicyWeights: a ``spawn`` lock shared with the children, or a no-op in serial mode."""
    return get_mp_lock(get_mp_ctx(serial))
