"""Sample Factory 2's constructors of the process roles (Batcher, LearnerWorker, InferenceWorker, RolloutWorker).

In Sample Factory 2 these classes are built from its own plumbing: its event loop, buffer manager, queues and
parameter servers. This package wires its components differently (``runners.components``: loop specs, a router and
shared buffers), so at Sample Factory 2's paths the names take Sample Factory 2's parameters and, given them, raise
:func:`sf2_wiring_error`, which names what to use instead. The same classes still accept this package's own form,
whose first argument is the run's config, and then build the real component (whose class has its own name).
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from sample_factory.algo.runners.child_process import set_process_options
from sample_factory.algo.runners.components import LoopSpec, SharedState
from sample_factory.algo.utils.context import SampleFactoryContext, set_global_context
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.utils.typing import Config


class _Unset:
    """The default of a parameter the caller did not pass (None may be a value the caller means)."""

    def __repr__(self) -> str:
        return "<not passed>"


UNSET: Any = _Unset()


def is_package_form(first_argument: object) -> bool:
    """Whether a constructor call is this package's form: it starts with the run's config (a Namespace or a dict such
    as AttrDict), where Sample Factory 2's starts with an event loop."""
    return isinstance(first_argument, argparse.Namespace | Mapping)


def passed(*values: object) -> list[object]:
    """The positional arguments a caller passed, without the trailing unset ones."""
    args = list(values)
    while args and args[-1] is UNSET:
        args.pop()
    if any(value is UNSET for value in args):
        raise TypeError("a positional argument is missing before the last one passed")
    return args


def require_package_form(role: object, first_argument: object, supported: str) -> None:
    """Raise :func:`sf2_wiring_error` unless ``first_argument`` starts this package's form; the message lists the
    parameters of ``type(role).__init__`` (Sample Factory 2's)."""
    if is_package_form(first_argument):
        return
    parameters = []
    for parameter in list(inspect.signature(type(role).__init__).parameters.values())[1:]:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            break
        parameters.append(parameter.name)
    raise sf2_wiring_error(type(role).__name__, ", ".join(parameters), supported)


def sf2_wiring_error(name: str, sf2_parameters: str, supported: str) -> TypeError:
    """The error of a role class constructed with Sample Factory 2's parameters: what to use instead."""
    return TypeError(
        f"{name}({sf2_parameters}) is Sample Factory 2's wiring of its own event loop, buffer manager and queues, "
        f"which this package does not have: {supported}"
    )


TRAINING_INSTEAD = (
    "build and run a training run with sample_factory.train.make_runner(cfg) (then runner.init() and runner.run()) "
    "or run_rl(cfg); it creates and wires every component"
)
SAMPLING_INSTEAD = (
    "to sample without a learner use sample_factory.algo.sampling.sampler.SerialSampler(event_loop, buffer_mgr, "
    "param_servers, cfg, env_info) on an event loop of yours, SyncSamplingAPI(cfg, env_info) or run_sampler(cfg, "
    "callback); to train, sample_factory.train.make_runner(cfg)"
)


def init_component_process(
    sf_context: SampleFactoryContext | None,
    cfg: Config,
    spec: LoopSpec,
    obs_space: gym.Space | None = None,
) -> None:
    """What a child process of the parallel runner sets up before its components run, for the loop ``spec``:
    installs ``sf_context`` (the registries of user envs and models; None keeps this process's), then the process
    settings of its kind (``child_process.set_process_options``: torch threads, GPUs, niceness, CPU affinity).

    Sample Factory 2's ``init_rollout_worker_process``, ``init_inference_process`` and ``init_learner_process`` are
    this, for one worker each; it changes the whole calling process (niceness cannot be lowered again)."""
    if sf_context is not None:
        set_global_context(sf_context)
    set_process_options(cfg, spec, spec.worker_idx, obs_space)


def _built_elsewhere(router: Router, shared: SharedState) -> list[Component]:
    raise RuntimeError("this loop spec only describes a worker that already exists; it builds nothing")


def worker_loop_spec(name: str, kind: str, worker_idx: int | None = None, policy_id: int | None = None) -> LoopSpec:
    """The loop spec of an existing component, for :func:`init_component_process`."""
    return LoopSpec(name, kind, [name], _built_elsewhere, worker_idx=worker_idx, policy_id=policy_id)


def init_rollout_worker_process(sf_context: SampleFactoryContext | None, worker: Any) -> None:
    """Sample Factory 2's name, at ``sampling.rollout_worker``: set up the calling process for rollout ``worker`` (any
    object with ``name``, ``cfg`` and ``worker_idx``) as the parallel runner sets up a rollout worker's process."""
    spec = worker_loop_spec(worker.name, "rollout", worker_idx=worker.worker_idx)
    init_component_process(sf_context, worker.cfg, spec)
