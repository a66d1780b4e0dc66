"""What runs inside every child process of the parallel runner, and the process-wide settings it applies.

A child ignores SIGINT/SIGTERM (the runner alone decides when to stop, and tells every component so checkpoints get
written), shows its components in ``ps`` (``process_title``), applies its kind's process settings
(``set_process_options``), runs its loop, and watches its parent from a thread (``OrphanGuard``) so that it never
outlives a runner that died. The exception that ends a child goes to the runner first (``on_process_traceback``), so
a restart or a failure can name it.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import traceback

import gymnasium as gym

from sample_factory.algo.runners.components import LoopSpec, SharedState, component_kinds
from sample_factory.algo.utils.cpu_sharing import LEARNER_NICENESS, learner_yields_cpu
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.cfg.validation import ConfigError
from sample_factory.compat.python_internals import run_exit_handlers
from sample_factory.messaging.event_loop import EventLoop, Router
from sample_factory.messaging.orphan_guard import OrphanGuard
from sample_factory.utils.gpu_utils import gpus_for_process, set_global_cuda_envvars, set_gpus_for_process
from sample_factory.utils.logging_setup import log
from sample_factory.utils.processes import cores_for_worker_process, pins_rollout_workers
from sample_factory.utils.typing import Config

RUNNER_LOOP = "runner"


# the evaluator's niceness above the run's: when the CPU is contended, collection and training get it first
EVALUATOR_NICENESS = 10


def set_process_options(
    cfg: Config, spec: LoopSpec, worker_idx: int | None, obs_space: gym.Space | None = None
) -> None:
    """Process-wide settings of a child, applied before its components (and so any CUDA call) exist.

    ``obs_space``: the observations of a learner process's policy (whether its learner yields the CPU)."""
    if spec.kind == "evaluator":
        _single_threaded_torch()
        os.nice(cfg.default_niceness + EVALUATOR_NICENESS)
    if spec.kind == "learner" and obs_space is not None and learner_yields_cpu(cfg, obs_space):
        os.nice(LEARNER_NICENESS)
        log.info(
            "%s: niceness +%d: the inference worker batches requests (--inference_batch_wait) and the learner trains "
            "on the CPU, so sampling gets a core first and the learner the rest",
            spec.name,
            LEARNER_NICENESS,
        )
    if spec.kind == "rollout":
        _single_threaded_torch()
        if cfg.actor_worker_gpus and worker_idx is not None:
            set_gpus_for_process(worker_idx, 1, "rollout worker", cfg.actor_worker_gpus)
        if cfg.default_niceness:
            os.nice(cfg.default_niceness)
        if pins_rollout_workers(cfg) and worker_idx is not None and hasattr(os, "sched_setaffinity"):
            allowed = sorted(os.sched_getaffinity(0))  # the i-th core of the run is the i-th allowed one
            cores = cores_for_worker_process(worker_idx, cfg.num_workers, len(allowed))
            if cores is not None:
                os.sched_setaffinity(0, {allowed[i] for i in cores})
        if cfg.force_envs_single_thread:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1)


def _single_threaded_torch() -> None:
    """One intra-op thread for torch in a rollout worker.

    The worker's own tensor work is copying a few rows of trajectory buffers (observations, RNN states). torch would
    split any copy above its grain size (32k elements, e.g. two Doom frames) over an OpenMP team as wide as the
    machine, whose cores the envs, the inference worker and the learner keep busy; a team member that is not
    scheduled keeps the others spinning at the barrier. Measured on 2 busy cores: 8 ms per copy of two 3x72x128
    frames with 2 threads, 4.5 us with one.
    """
    import torch

    torch.set_num_threads(1)


def pin_visible_gpus(cfg: Config) -> None:
    """Fix ``CUDA_VISIBLE_DEVICES`` before the children start, so positions in ``--actor_worker_gpus`` mean the
    same GPUs in every child, and refuse positions that name no GPU here rather than in each worker."""
    set_global_cuda_envvars(cfg)
    if not cfg.actor_worker_gpus:
        return
    try:
        gpus = gpus_for_process(0, 1, cfg.actor_worker_gpus)
    except ValueError as exc:
        raise ConfigError(f"--actor_worker_gpus: {exc}") from exc
    if not gpus:
        log.warning(
            "--actor_worker_gpus=%s but no GPU is visible: rollout workers run without one", cfg.actor_worker_gpus
        )


def shared_state_for(spec: LoopSpec, shared: SharedState) -> SharedState:
    """What a child process receives: rollout workers get no policy weights.

    They never read them, and weights that live on a GPU would initialise CUDA in every rollout worker when the
    process arguments are unpickled: a CUDA context per worker, made before ``--actor_worker_gpus`` narrows the
    GPUs the worker may see.
    """
    if spec.kind == "rollout":
        return dataclasses.replace(shared, weights=[])
    return shared


def process_title(spec: LoopSpec, cfg: Config) -> str:
    """What ``ps``/``top`` show for a child: its components' names and the experiment, e.g.
    ``rollout_w3 [cartpole]`` or ``learner_p0 batcher_p0 [cartpole]``, so a busy or stuck worker is identifiable."""
    kinds = component_kinds([spec])
    names = sorted(spec.component_names, key=lambda n: kinds[n] != "learner")
    return f"{' '.join(names)} [{cfg.experiment}]"


def set_process_title(title: str) -> None:
    """Replace this process's command line as shown by ``ps -eo args`` (and its ``comm`` name where allowed)."""
    import setproctitle

    setproctitle.setproctitle(title)


def child_main(spec: LoopSpec, router: Router, shared: SharedState, sf_context, parent_pid: int) -> None:
    """Entry point of every child process: build the loop's components and run it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from sample_factory.algo.utils.context import set_global_context
    from sample_factory.utils.distributed import log_file_name, this_rank
    from sample_factory.utils.logging_setup import init_file_logger
    from sample_factory.utils.utils import experiment_dir

    set_global_context(sf_context)
    cfg = shared.cfg
    set_process_title(process_title(spec, cfg))
    if cfg.log_to_file:
        init_file_logger(experiment_dir(cfg), log_file_name(this_rank()))
    policy_id = spec.policy_id if spec.kind == "learner" else None
    obs_space = None if policy_id is None else shared.buffers.spaces.env_info_of(policy_id).obs_space
    set_process_options(cfg, spec, spec.worker_idx, obs_space)
    loop = EventLoop(spec.name, router.inbox_of(spec.name), router)
    for component in spec.build(router, shared):
        loop.add_component(component)

    # a thread, not a timer of the loop: a runner killed while holding an inbox's lock blocks this loop in a put
    guard = OrphanGuard(spec.name, parent_pid, loop, RUNNER_LOOP)
    guard.start()
    try:
        loop.run()
    except BaseException:
        _tell_runner_last_words(router, spec.name, traceback.format_exc())
        raise
    finally:
        guard.stop()
        # a worker forked from the fork server ends with os._exit, which skips atexit: run the handlers user code
        # (an env, a simulator wrapper) registered, as a spawned worker's normal exit would (they run once)
        run_exit_handlers()


def _tell_runner_last_words(router: Router, loop_name: str, tb: str) -> None:
    """Send the runner the traceback that ends this process, so a restart or a failure can name it."""
    try:
        router.send(RUNNER, "on_process_traceback", loop_name, tb)
    except Exception:  # the runner is gone or unreachable: the traceback still goes to stderr
        pass
