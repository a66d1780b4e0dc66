"""Parallel runner: one process per rollout worker, per inference worker, and per policy's learner.

Children are started with the ``spawn`` method (safe with torch and simulator
threads). Each child ignores SIGINT/SIGTERM: the runner alone decides when to
stop and tells every component, so checkpoints get written. Each child also
watches its parent and exits if the runner disappears, so no orphan survives
a crashed or killed runner.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import time

from sample_factory.algo.runners.components import LoopSpec, SharedState, component_kinds, loop_specs
from sample_factory.algo.runners.runner import Runner
from sample_factory.algo.runners.runner_component import RunnerComponent
from sample_factory.algo.runners.setup import make_shared_state, obtain_env_info
from sample_factory.algo.utils.event_loop import EventLoop, LoopLiveness, Router, make_mp_inbox
from sample_factory.algo.utils.misc import ExperimentStatus
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.cfg.validation import ConfigError, require_cfg_fits_env
from sample_factory.utils.gpu_utils import gpus_for_process, set_global_cuda_envvars, set_gpus_for_process
from sample_factory.utils.logging_setup import log
from sample_factory.utils.processes import cores_for_worker_process
from sample_factory.utils.typing import Config, StatusCode

RUNNER_LOOP = "runner"
JOIN_TIMEOUT = 10.0
PARENT_CHECK_PERIOD = 1.0


def _set_process_options(cfg: Config, spec: LoopSpec, worker_idx: int | None) -> None:
    """Process-wide settings of a child, applied before its components (and so any CUDA call) exist."""
    if spec.kind == "rollout":
        if cfg.actor_worker_gpus and worker_idx is not None:
            set_gpus_for_process(worker_idx, 1, "rollout worker", cfg.actor_worker_gpus)
        if cfg.default_niceness:
            os.nice(cfg.default_niceness)
        if cfg.set_workers_cpu_affinity and worker_idx is not None and hasattr(os, "sched_setaffinity"):
            allowed = sorted(os.sched_getaffinity(0))  # the i-th core of the run is the i-th allowed one
            cores = cores_for_worker_process(worker_idx, cfg.num_workers, len(allowed))
            if cores is not None:
                os.sched_setaffinity(0, {allowed[i] for i in cores})
        if cfg.force_envs_single_thread:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1)


def _pin_visible_gpus(cfg: Config) -> None:
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


def _child_main(spec: LoopSpec, router: Router, shared: SharedState, sf_context, parent_pid: int) -> None:
    """Entry point of every child process: build the loop's components and run it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from sample_factory.algo.utils.context import set_global_context
    from sample_factory.utils.logging_setup import init_file_logger
    from sample_factory.utils.utils import experiment_dir

    set_global_context(sf_context)
    cfg = shared.cfg
    set_process_title(process_title(spec, cfg))
    if cfg.log_to_file:
        init_file_logger(experiment_dir(cfg))
    _set_process_options(cfg, spec, spec.worker_idx)
    loop = EventLoop(spec.name, router.inboxes[spec.name], router)
    for component in spec.build(router, shared):
        loop.add_component(component)

    def check_parent() -> None:
        if os.getppid() != parent_pid:
            # stop the loop rather than exit on the spot: on_stop() then closes envs and simulators
            log.error("%s: the runner process is gone, closing down", spec.name)
            loop.stop()

    loop.add_timer(PARENT_CHECK_PERIOD, check_parent)
    loop.run()


class ParallelRunner(Runner):
    def __init__(self, cfg: Config, unique_name: str = "runner", **runner_inputs) -> None:
        super().__init__(cfg, unique_name, **runner_inputs)
        self.runner: RunnerComponent | None = None
        self.processes: dict[str, multiprocessing.Process] = {}
        self.process_components: dict[str, list[str]] = {}
        self.inboxes: dict = {}
        self.liveness: LoopLiveness | None = None
        self.shared: SharedState | None = None

    def init(self) -> StatusCode:
        from sample_factory.algo.utils.context import sf_global_context

        cfg = self.cfg
        if not self.prepare_run():
            return ExperimentStatus.SUCCESS
        env_info = self.given_env_info or obtain_env_info(cfg)
        require_cfg_fits_env(cfg, env_info)
        _pin_visible_gpus(cfg)
        # held for the whole run: children unpickle these (semaphores, shared-memory fds) after start()
        self.shared = shared = make_shared_state(cfg, env_info, serial=False, weights=self.policy_weights)
        all_specs = loop_specs(cfg, self.learner_specs)
        specs = [spec for spec in all_specs if not spec.in_main_process]  # one child process each
        component_loops = {RUNNER: RUNNER_LOOP}
        for spec in all_specs:
            loop_name = RUNNER_LOOP if spec.in_main_process else spec.name
            component_loops.update({name: loop_name for name in spec.component_names})
        self.inboxes = {RUNNER_LOOP: make_mp_inbox(), **{spec.name: make_mp_inbox() for spec in specs}}
        # shared by every process: a sender stuck on the full inbox of a dead loop fails instead of waiting forever
        self.liveness = LoopLiveness(self.inboxes, share=True)
        router = Router(component_loops, self.inboxes, self.liveness)
        loop = EventLoop(RUNNER_LOOP, self.inboxes[RUNNER_LOOP], router)
        self.runner = _ParallelRunnerComponent(cfg, env_info, router, self)
        self.runner.attach(loop, all_specs)
        for spec in all_specs:
            if spec.in_main_process:
                for component in spec.build(router, shared):
                    loop.add_component(component)
        self.notify_observers("on_connect_components")
        self.runner.install_signal_handlers()

        ctx = multiprocessing.get_context("spawn")
        child_router = Router(component_loops, self.inboxes, self.liveness)
        for spec in specs:
            proc = ctx.Process(
                target=_child_main,
                args=(spec, child_router, shared_state_for(spec, shared), sf_global_context(), os.getpid()),
                name=spec.name,
                daemon=False,
            )
            proc.start()
            self.processes[spec.name] = proc
            self.process_components[spec.name] = spec.component_names
        log.info("Started %d processes", len(self.processes))
        return ExperimentStatus.SUCCESS

    def run(self) -> StatusCode:
        if self.nothing_to_do:
            return ExperimentStatus.SUCCESS
        try:
            self.runner.call_user_code(self.notify_observers, "on_start")
            status = self.runner.run_loop()
        finally:
            self._join_all()
        return status

    def request_stop_threadsafe(self) -> None:
        """Ask the runner to stop from another thread of this process (the sampling API's caller).

        Goes through the runner's inbox like any message, so the runner's loop thread does the stopping.
        """
        self.runner.loop.post(RUNNER, "request_stop")

    def dead_processes(self) -> list[tuple[str, int]]:
        """``(loop name, exit code)`` of every child that ended; their loops are marked exited for the senders."""
        dead = [(n, p.exitcode) for n, p in self.processes.items() if p.exitcode is not None]
        for name, _ in dead:
            self.liveness.mark_exited(name)
        return dead

    def _join_all(self) -> None:
        deadline = time.monotonic() + JOIN_TIMEOUT
        for name, proc in self.processes.items():
            proc.join(timeout=max(0.1, deadline - time.monotonic()))
            if proc.is_alive():
                log.warning("Process %s did not exit in time, terminating it", name)
                proc.kill()
                proc.join(timeout=5)
        for inbox in self.inboxes.values():
            inbox.close()


class _ParallelRunnerComponent(RunnerComponent):
    """Adds child-process liveness checks to the base runner component."""

    def check_processes(self) -> None:
        for name, code in self.owner.dead_processes():
            components = [c for c in self.owner.process_components[name] if c not in self.stopped_trees]
            if not components:
                continue
            if self.stop_requested_at is None or code != 0:
                log.error("Process %s exited unexpectedly with code %s", name, code)
                self.status = ExperimentStatus.FAILURE
            self.request_stop(save=False)
            for component in components:
                self.on_component_stopped(component, "")
