"""Construction of every non-runner component, shared by the parallel and serial runners.

Each ``build_*`` function is a module-level function (picklable) that makes the
components of one loop; the parallel runner calls it inside the child process,
the serial runner in its own process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sample_factory.algo.learning.batcher import Batcher
from sample_factory.algo.learning.learner_worker import LearnerWorker
from sample_factory.algo.sampling.inference_worker import InferenceWorker
from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.event_loop import Component, Router
from sample_factory.algo.utils.sampler_state import SamplerStateExchange
from sample_factory.algo.utils.shared_buffers import PolicyWeights, SlotOwners
from sample_factory.algo.utils.tensor_dict import TensorDict
from sample_factory.algo.utils.wiring import batcher_name, inference_worker_name, learner_name, rollout_worker_name
from sample_factory.utils.typing import Config


@dataclass
class SharedState:
    """What every component may need: config, env info, buffers and queues."""

    cfg: Config
    env_info: EnvInfo
    traj: TensorDict
    slot_owners: SlotOwners  # which rollout worker hands out which trajectory slot
    weights: list[PolicyWeights]
    serial: bool
    # exact resume in serial sync mode (an in-process object; None in parallel mode)
    sampler_states: SamplerStateExchange | None = None


@dataclass
class LoopSpec:
    """One event loop (one process in parallel mode) and how to build its components."""

    name: str
    kind: str  # "rollout", "inference" or "learner"
    component_names: list[str]
    build: Callable[[Router, SharedState], list[Component]]
    # built on the runner's own loop instead of a child process (parallel mode): a consumer that hands trajectories
    # to code in the main process, e.g. the synchronous sampling API
    in_main_process: bool = False


def build_rollout_worker(worker_idx: int, router: Router, s: SharedState) -> list[Component]:
    return [RolloutWorker(s.cfg, s.env_info, worker_idx, router, s.traj, s.slot_owners, s.sampler_states)]


def build_inference_worker(policy_id: int, idx: int, router: Router, s: SharedState) -> list[Component]:
    return [InferenceWorker(s.cfg, s.env_info, policy_id, idx, router, s.traj, s.weights[policy_id])]


def build_learner(policy_id: int, router: Router, s: SharedState) -> list[Component]:
    batcher = Batcher(s.cfg, s.env_info, policy_id, router, s.traj, s.slot_owners)
    weights = s.weights[policy_id]
    learner = LearnerWorker(s.cfg, s.env_info, policy_id, router, batcher, weights, s.serial, s.sampler_states)
    return [batcher, learner]


def learner_loop_specs(cfg: Config) -> list[LoopSpec]:
    """One loop per policy with its batcher and learner worker."""
    from functools import partial

    return [
        LoopSpec(learner_name(p), "learner", [batcher_name(p), learner_name(p)], partial(build_learner, p))
        for p in range(cfg.num_policies)
    ]


def loop_specs(cfg: Config, learner_specs: Callable[[Config], list[LoopSpec]] | None = None) -> list[LoopSpec]:
    """Every loop except the runner's, learners first so their weights are published early.

    ``learner_specs`` replaces what consumes trajectories (the sampler-only mode uses it).
    """
    from functools import partial

    specs = list((learner_specs or learner_loop_specs)(cfg))
    for p in range(cfg.num_policies):
        for j in range(cfg.policy_workers_per_policy):
            name = inference_worker_name(p, j)
            specs.append(LoopSpec(name, "inference", [name], partial(build_inference_worker, p, j)))
    for w in range(cfg.num_workers):
        name = rollout_worker_name(w)
        specs.append(LoopSpec(name, "rollout", [name], partial(build_rollout_worker, w)))
    return specs
