"""Sample Factory 2's ``sampling_utils`` names: the split runners' base class and two small sampling helpers."""

from __future__ import annotations

import torch

from sample_factory.algo.sampling.env_runner import _recorded_episode
from sample_factory.algo.sampling.vector_env_runner import VectorEnvRunner
from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.typing import Config

__all__ = ["VectorEnvRunner", "record_episode_statistics_wrapper_stats", "rollout_worker_device"]


def rollout_worker_device(worker_idx: int, cfg: Config, env_info: EnvInfo) -> torch.device:
    """Where rollout worker ``worker_idx`` keeps the trajectories it writes: host memory.

    This package's trajectory buffers are allocated once in CPU shared memory, which every process maps; observations
    an env returns on a GPU (``--env_gpu_observations``) are copied there. ``--actor_worker_gpus`` gives a worker's
    envs a GPU to simulate on, not a different trajectory device.
    """
    return torch.device("cpu")


def record_episode_statistics_wrapper_stats(info: dict) -> tuple[float, int] | None:
    """``(reward, length)`` of the episode that ended, as a ``RecordEpisodeStatistics`` wrapper wrote them in
    ``info["episode"]`` (``{"r": ..., "l": ...}``); None when the info carries no such record.

    The wrapper's sums can differ from the sampler's own (e.g. the unclipped reward under a reward-clipping wrapper,
    the full game under ``EpisodicLifeEnv``); ``--use_record_episode_statistics`` makes the sampler report them.
    """
    episode = info.get("episode") if isinstance(info, dict) else None
    if not isinstance(episode, dict) or "r" not in episode:
        return None
    return _recorded_episode(info, 0.0, 0)
