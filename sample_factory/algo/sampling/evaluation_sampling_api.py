"""Sample Factory 2's evaluation sampling API: the synchronous sampling API that also keeps every finished episode.

    sampler = EvalSamplingAPI(cfg, env_info)
    sampler.start()
    while len(sampler.eval_episodes[0]) < 100 and sampler.get_trajectories_sync() is not None:
        pass
    sampler.stop()
    rewards = [episode["reward"] for episode in sampler.eval_episodes[0]]

The sampler is :class:`~sample_factory.algo.sampling.sync_sampling_api.SyncSamplingAPI`'s (a fixed policy: the given
weights, else the latest checkpoint); the episodes are the runner's per-episode statistics messages (``reward``,
``len``, ``true_objective`` and the env's ``episode_extra_stats``), kept per policy in the order they ended. In
serial mode the envs step only while the caller takes trajectories, so the caller keeps taking them until it has
enough episodes. For a fixed number of episodes counted without bias, with per-episode results written to a CSV,
see ``sample_factory.eval``.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from sample_factory.algo.sampling.simplified_sampling_api import SamplingLoop as _SamplingLoop
from sample_factory.algo.sampling.simplified_sampling_api import sampling_loop_error
from sample_factory.algo.sampling.sync_sampling_api import SyncSamplingAPI
from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.misc import EPISODIC
from sample_factory.utils.typing import Config, PolicyID

__all__ = ["EvalSamplingAPI", "SamplingLoop"]


class EvalSamplingAPI(SyncSamplingAPI):
    """``SyncSamplingAPI`` that keeps the statistics of every finished episode (module docstring).

    Args: as ``SyncSamplingAPI``.
    """

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo | None = None,
        buffer_mgr: Any = None,
        param_servers: Mapping[PolicyID, Any] | None = None,
        max_queued_trajectories: int | None = None,
    ) -> None:
        super().__init__(cfg, env_info, buffer_mgr, param_servers, max_queued_trajectories)
        self._episodes: dict[PolicyID, list[dict]] = defaultdict(list)
        self._episodes_lock = threading.Lock()  # the runner's thread adds episodes in parallel mode

    def _configure_runner(self, runner: Any) -> None:
        runner.register_episodic_stats_handler(self._on_episode)

    def _on_episode(self, runner: Any, msg: dict, policy_id: PolicyID) -> None:
        with self._episodes_lock:
            self._episodes[policy_id].append(dict(msg[EPISODIC]))

    @property
    def eval_episodes(self) -> dict[PolicyID, list[dict]]:
        """Per policy, the statistics of its finished episodes so far, oldest first (a copy)."""
        with self._episodes_lock:
            return {policy_id: list(episodes) for policy_id, episodes in self._episodes.items()}

    @property
    def eval_env_steps(self) -> dict[PolicyID, int]:
        """Env frames sampled per policy so far."""
        return self.runner.env_steps if self.runner is not None else {}


class SamplingLoop(_SamplingLoop):
    """Sample Factory 2's event-loop object behind ``EvalSamplingAPI``; constructing it raises, naming the API."""

    def __init__(
        self, cfg: Config, env_info: EnvInfo | None, print_episode_info: bool = False, *args: Any, **kwargs: Any
    ) -> None:
        raise sampling_loop_error(type(self).__name__, "EvalSamplingAPI(cfg, env_info)")
