"""The sampling side's loops: one per inference worker and one per rollout worker (see ``runners.components``)."""

from __future__ import annotations

from functools import partial

from sample_factory.algo.runners.components import LoopSpec, SharedState
from sample_factory.algo.sampling.inference_worker import InferenceWorker
from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.algo.utils.wiring import inference_worker_name, rollout_worker_name
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.utils.typing import Config


def build_rollout_worker(worker_idx: int, router: Router, s: SharedState) -> list[Component]:
    worker = RolloutWorker(s.cfg, s.env_info, worker_idx, router, s.traj, s.slot_owners, s.sampler_states, s.restart)
    return [worker]


def build_inference_worker(policy_id: int, idx: int, router: Router, s: SharedState) -> list[Component]:
    worker = InferenceWorker(s.cfg, s.env_info, policy_id, idx, router, s.traj, s.weights[policy_id], s.slot_owners)
    return [worker]


def sampling_loop_specs(cfg: Config) -> list[LoopSpec]:
    """``--policy_workers_per_policy`` inference loops per policy, then ``--num_workers`` rollout loops."""
    specs = []
    for p in range(cfg.num_policies):
        for j in range(cfg.policy_workers_per_policy):
            name = inference_worker_name(p, j)
            build = partial(build_inference_worker, p, j)
            specs.append(LoopSpec(name, "inference", [name], build, worker_idx=j, policy_id=p))
    for w in range(cfg.num_workers):
        name = rollout_worker_name(w)
        specs.append(LoopSpec(name, "rollout", [name], partial(build_rollout_worker, w), worker_idx=w))
    return specs
