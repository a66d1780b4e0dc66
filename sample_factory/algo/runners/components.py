"""What the runners run: loop specs (one event loop, one process in parallel mode) and the state they share.

The runners know how to run loops, not what runs in them: a run is a list of :class:`LoopSpec`, each with a
module-level (picklable) ``build`` function that makes the components of one loop. The parallel runner calls it
inside the child process, the serial runner in its own process. The specs of a training run are composed above
both sides (``sample_factory.train.training_loop_specs``: the learners of ``algo.learning.loop_specs``, then the
sampling side's ``algo.sampling.loop_specs``); the sampler-only modes put trajectory consumers where the learners
would be.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.algo.utils.sampler_state import SamplerStateExchange
from sample_factory.algo.utils.shared_buffers import PolicyWeights, SlotOwners, TrajectoryBuffers
from sample_factory.algo.utils.wiring import learner_name
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import Config

# every loop of a run, from its config
LoopSpecs = Callable[[Config], list["LoopSpec"]]


@dataclass
class SharedState:
    """What every component may need: config, env info, buffers and queues."""

    cfg: Config
    env_info: EnvInfo
    buffers: TrajectoryBuffers  # trajectory slots, one set per space group (one group when all agents are alike)
    slot_owners: SlotOwners  # which rollout worker hands out which trajectory slot
    weights: list[PolicyWeights]
    serial: bool
    # exact resume in serial sync mode (an in-process object; None in parallel mode)
    sampler_states: SamplerStateExchange | None = None
    # parallel mode, a process started again in place of a dead one: what its components must know
    restart: RestartInfo | None = None

    @property
    def traj(self) -> TensorDict:
        """The trajectory slots of a run whose agents all have the same spaces (the sampler API's ``traj``)."""
        if len(self.buffers.by_group) != 1:
            raise ValueError(
                "this run's agents have different spaces, so its trajectory slots are per space group: "
                "use buffers.of_policy(policy_id)"
            )
        return self.buffers.by_group[0]

    def for_policy(self, policy_id: int) -> PolicyWiring:
        """What the components of ``policy_id`` (inference workers, batcher, learner) share with the rest."""
        return PolicyWiring(
            policy_id=policy_id,
            env_info=self.buffers.spaces.env_info_of(policy_id),
            traj=self.buffers.of_policy(policy_id),
            slot_owners=self.slot_owners,
            weights=self.weights[policy_id] if self.weights else None,
        )


@dataclass(frozen=True)
class PolicyWiring:
    """One policy's share of the run: its env info (its own spaces), its trajectory buffers, the slot ownership
    (whom freed slots go back to) and its published weights. Built by ``SharedState.for_policy``."""

    policy_id: int
    env_info: EnvInfo
    traj: TensorDict
    slot_owners: SlotOwners
    weights: PolicyWeights | None


@dataclass
class LoopSpec:
    """One event loop (one process in parallel mode) and how to build its components.

    What a loop is and which worker it holds are fields (``kind``, ``worker_idx``, ``policy_id``), read by the
    runners wherever they treat kinds of worker differently: component names are addresses, never parsed.
    """

    name: str
    # "rollout", "inference", "learner" (a policy's batcher and learner, or a consumer in their place) or "evaluator"
    kind: str
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
        needs = {
            "rollout": ("worker_idx",),
            "inference": ("worker_idx", "policy_id"),
            "learner": ("policy_id",),
            "evaluator": (),  # one for every policy
        }
        if self.kind not in needs:
            raise ValueError(f"LoopSpec {self.name!r}: kind {self.kind!r} is not one of {sorted(needs)}")
        missing = [field for field in needs[self.kind] if getattr(self, field) is None]
        if missing:
            raise ValueError(f"LoopSpec {self.name!r} of kind {self.kind!r} needs {' and '.join(missing)}")


def component_kinds(specs: list[LoopSpec]) -> dict[str, str]:
    """The kind of every component of ``specs``: "rollout", "inference", "learner" (a policy's learner worker),
    "batcher" (a policy's batcher, or a consumer that takes its place in the sampler-alone modes) or "evaluator"."""
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
