"""Sample Factory 2's ``NonBatchedVectorEnvRunner``: one split whose envs are stepped one by one.

Each env is created with ``create_env`` and stepped by :class:`NonBatchedEnvRunner`; see
``sample_factory.algo.sampling.vector_env_runner`` for the constructor's parameters and the methods.
"""

from __future__ import annotations

from sample_factory.algo.sampling.env_runner import EpisodeStats, NonBatchedEnvRunner
from sample_factory.algo.sampling.vector_env_runner import VectorEnvRunner
from sample_factory.algo.utils.shared_buffers import numpy_views
from sample_factory.envs.create_env import create_env


class NonBatchedVectorEnvRunner(VectorEnvRunner):
    """A split of ``num_envs`` envs stepped one after another, each actor's results written to its slot."""

    batched = False

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
