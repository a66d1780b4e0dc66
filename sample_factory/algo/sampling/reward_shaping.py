"""Handing PBT's reward-shaping schemes to the env agents a policy controls.

Each policy of a population may have its own scheme (``RewardShapingInterface`` on the env or one of its wrappers).
An actor of a rollout split is one agent of one env; a natively batched env takes the scheme for its actors
directly. Envs without the interface are left alone.
"""

from __future__ import annotations

import numpy as np

from sample_factory.algo.sampling.env_runner import BatchedEnvRunner, NonBatchedEnvRunner
from sample_factory.envs.env_utils import RewardShapingInterface, find_wrapper_interface


def apply_reward_shaping(
    runner: NonBatchedEnvRunner | BatchedEnvRunner, actors: np.ndarray, schemes: list[dict | None], num_agents: int
) -> None:
    """Give each of ``actors`` (indices into the split) the scheme of the policy that now controls it."""
    batched = isinstance(runner, BatchedEnvRunner)
    for actor in actors:
        scheme = schemes[runner.state.policy[actor]]
        if scheme is None:
            continue
        vectorized = find_wrapper_interface(runner.env.env, RewardShapingInterface) if batched else None
        if vectorized is not None:  # one natively batched env: its actors are its agents
            shaping, agent = vectorized, int(actor)
        else:
            envs = runner.env.envs if batched else runner.envs
            shaping = find_wrapper_interface(envs[actor // num_agents], RewardShapingInterface)
            agent = int(actor % num_agents)
        if shaping is not None:
            shaping.set_reward_shaping(scheme, agent)
