"""Construction of every non-runner component, shared by the parallel and serial runners.

Each ``build_*`` function is a module-level function (picklable) that makes the
components of one loop; the parallel runner calls it inside the child process,
the serial runner in its own process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sample_factory.algo.learning.batch_buffers import TrainingBatches, batch_placement
from sample_factory.algo.learning.batcher import Batcher
from sample_factory.algo.learning.learner_worker import LearnerWorker
from sample_factory.algo.sampling.inference_worker import InferenceWorker
from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.event_loop import Component, Router
from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.algo.utils.sampler_state import SamplerStateExchange
from sample_factory.algo.utils.shared_buffers import PolicyWeights, SlotOwners
from sample_factory.algo.utils.tensor_dict import TensorDict
from sample_factory.algo.utils.wiring import batcher_name, inference_worker_name, learner_name, rollout_worker_name
from sample_factory.utils.gpu_utils import policy_device
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
    # parallel mode, a process started again in place of a dead one: what its components must know
    restart: RestartInfo | None = None


@dataclass
class LoopSpec:
    """One event loop (one process in parallel mode) and how to build its components.

    What a loop is and which worker it holds are fields (``kind``, ``worker_idx``, ``policy_id``), read by the
    runners wherever they treat kinds of worker differently: component names are addresses, never parsed.
    """

    name: str
    kind: str  # "rollout", "inference" or "learner" (a policy's batcher and learner, or a consumer in their place)
    component_names: list[str]
    build: Callable[[Router, SharedState], list[Component]]
    # built on the runner's own loop instead of a child process (parallel mode): a consumer that hands trajectories
    # to code in the main process, e.g. the synchronous sampling API
    in_main_process: bool = False
    # rollout loop: the worker's index; inference loop: the worker's index among its policy's inference workers
    worker_idx: int | None = None
    # inference and learner loops: the policy they serve
    policy_id: int | None = None

    def __post_init__(self) -> None:
        needs = {"rollout": ("worker_idx",), "inference": ("worker_idx", "policy_id"), "learner": ("policy_id",)}
        if self.kind not in needs:
            raise ValueError(f"LoopSpec {self.name!r}: kind {self.kind!r} is not one of {sorted(needs)}")
        missing = [field for field in needs[self.kind] if getattr(self, field) is None]
        if missing:
            raise ValueError(f"LoopSpec {self.name!r} of kind {self.kind!r} needs {' and '.join(missing)}")


def component_kinds(specs: list[LoopSpec]) -> dict[str, str]:
    """The kind of every component of ``specs``: "rollout", "inference", "learner" (a policy's learner worker) or
    "batcher" (a policy's batcher, or a consumer that takes its place in the sampler-alone modes)."""
    kinds: dict[str, str] = {}
    for spec in specs:
        for name in spec.component_names:
            if spec.kind == "learner":
                kinds[name] = "learner" if name == learner_name(spec.policy_id) else "batcher"
            else:
                kinds[name] = spec.kind
    return kinds


def rollout_worker_names(specs: list[LoopSpec]) -> list[str]:
    """The rollout workers' component names, in worker order."""
    rollout = sorted((s for s in specs if s.kind == "rollout"), key=lambda s: s.worker_idx)
    return [name for spec in rollout for name in spec.component_names]


def build_rollout_worker(worker_idx: int, router: Router, s: SharedState) -> list[Component]:
    worker = RolloutWorker(s.cfg, s.env_info, worker_idx, router, s.traj, s.slot_owners, s.sampler_states, s.restart)
    return [worker]


def build_inference_worker(policy_id: int, idx: int, router: Router, s: SharedState) -> list[Component]:
    worker = InferenceWorker(s.cfg, s.env_info, policy_id, idx, router, s.traj, s.weights[policy_id], s.slot_owners)
    return [worker]


def build_learner(policy_id: int, router: Router, s: SharedState) -> list[Component]:
    """A policy's batcher and learner worker, sharing batch buffers allocated here once, on the learner's device."""
    batches = TrainingBatches(s.cfg, s.env_info, batch_placement(policy_device(s.cfg, policy_id)))
    batcher = Batcher(s.cfg, policy_id, router, s.traj, s.slot_owners, batches, s.sampler_states)
    weights = s.weights[policy_id]
    learner = LearnerWorker(s.cfg, s.env_info, policy_id, router, batches, weights, s.serial, s.sampler_states)
    return [batcher, learner]


def learner_loop_specs(cfg: Config) -> list[LoopSpec]:
    """One loop per policy with its batcher and learner worker."""
    from functools import partial

    return [
        LoopSpec(learner_name(p), "learner", [batcher_name(p), learner_name(p)], partial(build_learner, p), policy_id=p)
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
            build = partial(build_inference_worker, p, j)
            specs.append(LoopSpec(name, "inference", [name], build, worker_idx=j, policy_id=p))
    for w in range(cfg.num_workers):
        name = rollout_worker_name(w)
        specs.append(LoopSpec(name, "rollout", [name], partial(build_rollout_worker, w), worker_idx=w))
    return specs
