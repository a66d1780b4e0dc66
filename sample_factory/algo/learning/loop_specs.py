"""The learning side's loops: one per policy with its batcher and learner worker.

A training run composes them with the sampling side's loops above both rooms
(``sample_factory.train.training_loop_specs``), so the learning room needs nothing of the sampling room."""

from __future__ import annotations

from functools import partial

from sample_factory.algo.learning.batch_buffers import LearnerLink, TrainingBatches, batch_placement
from sample_factory.algo.learning.batcher import BatcherComponent
from sample_factory.algo.learning.learner_worker import LearnerWorkerComponent
from sample_factory.algo.learning.rank_learner_worker import RankLearnerWorker
from sample_factory.algo.runners.components import LoopSpec, SharedState
from sample_factory.algo.utils.wiring import batcher_name, learner_name
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.utils.distributed import this_rank
from sample_factory.utils.gpu_utils import policy_device
from sample_factory.utils.typing import Config


def build_learner(policy_id: int, router: Router, s: SharedState) -> list[Component]:
    """A policy's batcher and learner worker, sharing batch buffers allocated here once, on the learner's device.

    In a distributed run (the environment names this process's rank) the learner averages its gradients with the
    other ranks' (``RankLearnerWorker``)."""
    wiring = s.for_policy(policy_id)
    batches = TrainingBatches(s.cfg, wiring.env_info, batch_placement(policy_device(s.cfg, policy_id)))
    link = LearnerLink(wiring, batches, s.sampler_states)
    rank = this_rank()
    worker = LearnerWorkerComponent if rank is None else partial(RankLearnerWorker, rank=rank)
    return [BatcherComponent(s.cfg, link, router), worker(s.cfg, link, router, s.serial)]


def learner_loop_specs(cfg: Config) -> list[LoopSpec]:
    """One loop per policy with its batcher and learner worker."""
    return [
        LoopSpec(learner_name(p), "learner", [batcher_name(p), learner_name(p)], partial(build_learner, p), policy_id=p)
        for p in range(cfg.num_policies)
    ]
