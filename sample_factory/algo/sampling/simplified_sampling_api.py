"""Sample Factory 2's earlier module path of the synchronous sampling API (:mod:`.sync_sampling_api`), and the name
of the event-loop object inside it."""

from __future__ import annotations

from typing import Any

from sample_factory.algo.sampling.sync_sampling_api import SyncSamplingAPI
from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.typing import Config

__all__ = ["SamplingLoop", "SyncSamplingAPI"]


def sampling_loop_error(name: str, instead: str) -> TypeError:
    """The error of building Sample Factory 2's sampling-loop object directly: what to use instead."""
    return TypeError(
        f"{name} is the object Sample Factory 2's sampling API runs on its own event loop, which this package does "
        f"not have; the API does that work here: use {instead} (start(), get_trajectories_sync(), stop())"
    )


class SamplingLoop:
    """Sample Factory 2's event-loop object behind ``SyncSamplingAPI``; here the API drives the sampler itself, so
    constructing this class raises, naming the API."""

    def __init__(self, cfg: Config, env_info: EnvInfo | None, *args: Any, **kwargs: Any) -> None:
        raise sampling_loop_error(type(self).__name__, "SyncSamplingAPI(cfg, env_info)")
