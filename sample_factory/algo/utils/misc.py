"""Sample Factory 2's module path for the small shared constants; they live in :mod:`sample_factory.utils.misc`.

Added here: Sample Factory 2's signal names. This package addresses messages to components instead
(``algo.utils.wiring``); the two functions give Sample Factory 2's names, one per rollout worker and one per policy,
for code that keys its own tables by them.
"""

from __future__ import annotations

from sample_factory.utils.misc import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    EPISODIC,
    EPS,
    ExperimentStatus,
    memory_stats,
)
from sample_factory.utils.typing import PolicyID


def advance_rollouts_signal(rollout_worker_idx: int) -> str:
    """The name of the event "actions are ready, step the envs" of one rollout worker (here the message
    ``on_actions_ready`` to ``wiring.rollout_worker_name(rollout_worker_idx)``)."""
    return f"advance{rollout_worker_idx}"


def new_trajectories_signal(policy_id: PolicyID) -> str:
    """The name of the event "trajectories of this policy are ready" (here the message ``on_new_trajectories`` to
    ``wiring.batcher_name(policy_id)``)."""
    return f"p{policy_id}_trajectories"
