"""Sample Factory 2's ``BatchedVectorEnvRunner``: one split stepped as a batch (``--batched_sampling=True``).

The split's envs come from ``make_env_func_batched`` (a natively vectorised env as is, anything else stacked by
``SequentialVectorizeWrapper``) and are stepped by :class:`BatchedEnvRunner`; see
``sample_factory.algo.sampling.vector_env_runner`` for the constructor's parameters and the methods.
"""

from __future__ import annotations

from sample_factory.algo.sampling.env_runner import BatchedEnvRunner, EpisodeStats
from sample_factory.algo.sampling.vector_env_runner import VectorEnvRunner
from sample_factory.envs.make_env import make_env_func_batched


class BatchedVectorEnvRunner(VectorEnvRunner):
    """A split of ``num_envs`` envs stepped as one batch, writing each step with single tensor operations."""

    batched = True

    def _make_runner(self) -> BatchedEnvRunner:
        env = make_env_func_batched(self.cfg, self._env_config(0), num_envs=self.num_envs)
        if env.num_agents != self.num_actors:
            env.close()
            raise ValueError(
                f"the batched env has {env.num_agents} actors, but num_envs={self.num_envs} x "
                f"env_info.num_agents={self.env_info.num_agents} = {self.num_actors} were expected"
            )
        return BatchedEnvRunner(self.cfg, self.env_info, env, self.traj, EpisodeStats(0))
