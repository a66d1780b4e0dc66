"""Sample Factory 2's ``NonBatchedVectorEnvRunner``: one split whose envs are stepped one by one.

Each env is created with ``create_env`` and stepped by :class:`NonBatchedEnvRunner`; see
``sample_factory.algo.sampling.vector_env_runner`` for the constructor's parameters and the methods.
"""

from __future__ import annotations

from typing import Any

from sample_factory.algo.sampling.env_runner import EpisodeStats, NonBatchedEnvRunner
from sample_factory.algo.sampling.vector_env_runner import VectorEnvRunner
from sample_factory.algo.utils.shared_buffers import numpy_views
from sample_factory.envs.create_env import create_env
from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import Config


class NonBatchedVectorEnvRunner(VectorEnvRunner):
    """A split of ``num_envs`` envs stepped one after another, each actor's results written to its slot."""

    batched = False

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        num_envs: int,
        worker_idx: int,
        split_idx: int,
        buffer_mgr: TensorDict | None,
        sampling_device: str,
        training_info: list[dict | None] | None,
    ) -> None:
        super().__init__(cfg, env_info, worker_idx, split_idx, buffer_mgr, sampling_device, num_envs, training_info)

    def _make_runner(self) -> NonBatchedEnvRunner:
        envs = []
        try:
            for i in range(self.num_envs):
                envs.append(create_env(self.cfg.env, cfg=self.cfg, env_config=self._env_config(i)))
        except BaseException:
            for env in envs:
                env.close()
            raise
        return NonBatchedEnvRunner(self.cfg, self.env_info, envs, numpy_views(self.traj), EpisodeStats(0))


class ActorState:
    """Sample Factory 2's per-agent state of its non-batched sampler, built from its buffer manager, trajectory queue
    and policy manager.

    This package keeps each actor's state in arrays of its split runner (``env_runner.NonBatchedEnvRunner``), so the
    object is not built here: constructing one raises, naming the classes to use.
    """

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        env: Any,
        worker_idx: int,
        split_idx: int,
        env_idx: int,
        agent_idx: int,
        global_env_idx: int,
        buffer_mgr: Any,
        traj_buffer_queue: Any,
        traj_tensors: Any,
        policy_output_tensors: Any,
        training_info: Any,
        policy_mgr: Any,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        raise TypeError(
            "ActorState is part of Sample Factory 2's non-batched sampler wiring (buffer manager, trajectory queue, "
            "policy manager), which this package does not have: step a split of envs with "
            "NonBatchedVectorEnvRunner(cfg, env_info, num_envs, worker_idx, split_idx, buffer_mgr, sampling_device, "
            "training_info), or sample with sampler.SerialSampler / sync_sampling_api.SyncSamplingAPI"
        )
