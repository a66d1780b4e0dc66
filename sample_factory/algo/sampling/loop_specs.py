"""The sampling side's loops: one per inference worker and one per rollout worker (see ``runners.components``), and
the evaluator's loop of a training run with ``--eval_every_env_steps``."""

from __future__ import annotations

from functools import partial

from sample_factory.algo.runners.components import LoopSpec, SharedState
from sample_factory.algo.sampling.evaluator import Evaluator, eval_env_name
from sample_factory.algo.sampling.inference_worker import InferenceWorkerComponent
from sample_factory.algo.sampling.rollout_worker import RolloutWorkerComponent
from sample_factory.algo.utils.wiring import evaluator_name, inference_worker_name, rollout_worker_name
from sample_factory.envs.env_families import discover_env_families, register_family_env
from sample_factory.envs.env_utils import UnknownEnvError, get_make_env_func
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.utils.typing import Config


def build_rollout_worker(worker_idx: int, router: Router, s: SharedState) -> list[Component]:
    worker = RolloutWorkerComponent(
        s.cfg, s.env_info, worker_idx, router, s.buffers, s.slot_owners, s.sampler_states, s.restart
    )
    return [worker]


def build_inference_worker(policy_id: int, idx: int, router: Router, s: SharedState) -> list[Component]:
    worker = InferenceWorkerComponent(s.cfg, s.for_policy(policy_id), idx, router)
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


def build_evaluator(router: Router, s: SharedState) -> list[Component]:
    return [Evaluator(s.cfg, s.env_info, router, s.weights, s.serial)]


def evaluator_loop_specs(cfg: Config) -> list[LoopSpec]:
    """The evaluator's loop when ``--eval_every_env_steps`` is on (none otherwise).

    Called in the main process before any worker starts: ``--eval_env`` is made creatable here (by its env family
    when user code did not register it), so that the registry the processes receive has it, and a name that nothing
    can create fails now, naming the flag.
    """
    if cfg.eval_every_env_steps <= 0:
        return []
    register_eval_env(eval_env_name(cfg))
    name = evaluator_name()
    return [LoopSpec(name, "evaluator", [name], build_evaluator)]


def register_eval_env(env_name: str) -> None:
    """Make ``env_name`` creatable: registered already, or by the env family that owns the name."""
    try:
        get_make_env_func(env_name)
        return
    except UnknownEnvError:
        pass
    discover_env_families()
    try:
        register_family_env(env_name)
    except UnknownEnvError as exc:
        raise UnknownEnvError(f"--eval_env={env_name}: {exc}") from exc
