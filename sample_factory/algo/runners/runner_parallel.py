"""Parallel runner: one process per rollout worker, per inference worker, and per policy's learner.

Children are started with the ``spawn`` method (safe with torch and simulator
threads). Each child ignores SIGINT/SIGTERM: the runner alone decides when to
stop and tells every component, so checkpoints get written. Each child also
watches its parent and exits if the runner disappears, so no orphan survives
a crashed or killed runner. A child that dies or stops sending heartbeats once training runs is restarted in
place (``respawn``); one that dies during start-up ends the run, as a start-up failure is a bug to fix, not luck.
A thread of the runner (``QueueDoctor``) unlocks any inbox left locked by a process killed inside a put or get.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import time
import traceback
from collections import deque

from sample_factory.algo.learning.checkpoints import list_checkpoints
from sample_factory.algo.runners.components import LoopSpec, SharedState, component_kinds, loop_specs
from sample_factory.algo.runners.orphan_guard import OrphanGuard
from sample_factory.algo.runners.respawn import Respawner, describe_exit, silence_limit
from sample_factory.algo.runners.runner import Runner
from sample_factory.algo.runners.runner_component import RunnerComponent
from sample_factory.algo.runners.serial_watchdog import SerialStallWatchdog, exit_with_failure
from sample_factory.algo.runners.setup import make_shared_state, obtain_env_info
from sample_factory.algo.utils.event_loop import EventLoop, LoopLiveness, Router, make_mp_inbox
from sample_factory.algo.utils.misc import ExperimentStatus
from sample_factory.algo.utils.queue_repair import QueueDoctor, QueueRepair, lock_holder, thread_alive
from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.cfg.validation import ConfigError, require_cfg_fits_env
from sample_factory.utils.gpu_utils import gpus_for_process, set_global_cuda_envvars, set_gpus_for_process
from sample_factory.utils.logging_setup import log
from sample_factory.utils.processes import cores_for_worker_process, pins_rollout_workers
from sample_factory.utils.typing import Config, StatusCode

RUNNER_LOOP = "runner"
SPARE_INBOX_BYTES = 1024 * 1024
JOIN_TIMEOUT = 10.0


def _set_process_options(cfg: Config, spec: LoopSpec, worker_idx: int | None) -> None:
    """Process-wide settings of a child, applied before its components (and so any CUDA call) exist."""
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


def _tell_runner_last_words(router: Router, loop_name: str, tb: str) -> None:
    """Send the runner the traceback that ends this process, so a restart or a failure can name it."""
    try:
        router.send(RUNNER, "on_process_traceback", loop_name, tb)
    except Exception:  # the runner is gone or unreachable: the traceback still goes to stderr
        pass


class ParallelRunner(Runner):
    def __init__(self, cfg: Config, unique_name: str = "runner", **runner_inputs) -> None:
        super().__init__(cfg, unique_name, **runner_inputs)
        self.runner: RunnerComponent | None = None
        self.processes: dict[str, multiprocessing.Process] = {}
        self.process_components: dict[str, list[str]] = {}
        self.inboxes: dict = {}
        self.liveness: LoopLiveness | None = None
        self.shared: SharedState | None = None
        self.specs: dict[str, LoopSpec] = {}  # every child's loop spec, by loop name
        self.component_loops: dict[str, str] = {}
        self.dead: set[str] = set()  # loops whose process died (and was reported) and has not been replaced yet
        self.kill_reasons: dict[str, str] = {}  # loops this runner killed, and why
        self._spawn_args: tuple | None = None
        self.spare_inboxes: list = []
        self._spares_used = 0
        self.queue_doctor: QueueDoctor | None = None
        self.queue_repairs: deque[QueueRepair] = deque()  # filled by the doctor's thread, read by the runner's loop
        self.stall_watchdog: SerialStallWatchdog | None = None

    def init(self) -> StatusCode:
        from sample_factory.algo.utils.context import sf_global_context

        cfg = self.cfg
        if not self.prepare_run():
            return ExperimentStatus.SUCCESS
        env_info = self.given_env_info or obtain_env_info(cfg)
        require_cfg_fits_env(cfg, env_info)
        _pin_visible_gpus(cfg)
        if cfg.set_workers_cpu_affinity and not pins_rollout_workers(cfg):
            log.info(
                "Sync mode (--async_rl=False): rollout workers are not pinned to cores, the scheduler places them "
                "(faster here, see docs/architecture.md); pass --set_workers_cpu_affinity=True explicitly to pin them"
            )
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
        # one fresh inbox per allowed restart (see LoopLiveness); small: a restarted loop's traffic is control only
        restarts = cfg.max_restarts_total if cfg.max_restarts > 0 and self.learner_specs is None else 0
        self.spare_inboxes = [make_mp_inbox(SPARE_INBOX_BYTES) for _ in range(max(0, restarts))]
        self.queue_doctor = QueueDoctor(self.watched_queues, self.queue_repairs.append)
        self.queue_doctor.start()
        router = Router(component_loops, self.inboxes, self.liveness, self.spare_inboxes)
        loop = EventLoop(RUNNER_LOOP, self.inboxes[RUNNER_LOOP], router)
        self.runner = _ParallelRunnerComponent(cfg, env_info, router, self)
        self.runner.attach(loop, all_specs)
        self.runner.respawner = Respawner(self.runner, self, all_specs)
        if cfg.heartbeat_timeout > 0:  # the last line of defence: the runner's own loop blocked for good
            self.stall_watchdog = SerialStallWatchdog(
                float(cfg.heartbeat_timeout),
                float(cfg.reset_timeout_seconds),
                self._describe_queues_and_checkpoints,
                self._end_stalled_run,
                what="Parallel runner",
                cause="the runner's own event loop does not return (a queue operation that never ends, most likely)",
                advice="Every child process is killed; this is a bug, please report this message.",
            )
            loop.add_after_hook(self.stall_watchdog.beat)
        self.component_loops = component_loops
        for spec in all_specs:
            if spec.in_main_process:
                for component in spec.build(router, shared):
                    loop.add_component(component)
        self.notify_observers("on_connect_components")
        self.runner.install_signal_handlers()

        child_router = Router(component_loops, self.inboxes, self.liveness, self.spare_inboxes)
        self._spawn_args = (multiprocessing.get_context("spawn"), child_router, sf_global_context())
        for spec in specs:
            self.start_process(spec)
        log.info("Started %d processes", len(self.processes))
        return ExperimentStatus.SUCCESS

    def start_process(self, spec: LoopSpec, restart: RestartInfo | None = None) -> None:
        """Start the child process of ``spec`` (again, in place of a dead one, when ``restart`` is given)."""
        ctx, child_router, sf_context = self._spawn_args
        shared = shared_state_for(spec, self.shared)
        if restart is not None:
            shared = dataclasses.replace(shared, restart=restart)
        old = self.processes.get(spec.name)
        if old is not None:
            old.join(timeout=1.0)  # reaps the dead one
        self.liveness.mark_alive(spec.name)
        proc = ctx.Process(
            target=_child_main,
            args=(spec, child_router, shared, sf_context, os.getpid()),
            name=spec.name,
            daemon=False,
        )
        proc.start()
        self.processes[spec.name] = proc
        self.process_components[spec.name] = spec.component_names
        self.specs[spec.name] = spec
        self.dead.discard(spec.name)

    def run(self) -> StatusCode:
        if self.nothing_to_do:
            return ExperimentStatus.SUCCESS
        if self.stall_watchdog is not None:
            self.stall_watchdog.start()
        try:
            self.runner.call_user_code(self.notify_observers, "on_start")
            status = self.runner.run_loop()
        finally:
            if self.stall_watchdog is not None:
                self.stall_watchdog.stop()
            self._join_all()
        return status

    def _describe_queues_and_checkpoints(self) -> str:
        """For the stall message: inboxes whose lock is held now (by whom), and the checkpoint to resume from."""
        held = []
        for label, q in self.watched_queues().items():
            holder = lock_holder(q)
            if holder is not None:
                state = "alive" if holder and thread_alive(holder) else "no longer exists"
                held.append(f"the {label} is locked by thread {holder} ({state})")
        latest = [paths[-1] for p in range(self.cfg.num_policies) if (paths := list_checkpoints(self.cfg, p))]
        where = f"The latest checkpoint ({', '.join(latest)}) is complete." if latest else "No checkpoint was written."
        locked = "; ".join(held)
        return (locked[:1].upper() + locked[1:] + ". " if held else "No inbox is locked now. ") + where

    def _end_stalled_run(self, message: str) -> None:
        """Called on the watchdog's thread: the runner's loop is stuck, so kill the children here and exit."""
        for proc in self.processes.values():
            if proc.exitcode is None:
                proc.kill()
        for proc in self.processes.values():
            proc.join(timeout=5)
        exit_with_failure(message)

    def request_stop_threadsafe(self) -> None:
        """Ask the runner to stop from another thread of this process (the sampling API's caller).

        Goes through the runner's inbox like any message, so the runner's loop thread does the stopping.
        """
        self.runner.loop.post(RUNNER, "request_stop")

    def dead_processes(self) -> list[tuple[str, int]]:
        """``(loop name, exit code)`` of every child that ended since the last call (each death is told once)."""
        dead = [(n, p.exitcode) for n, p in self.processes.items() if p.exitcode is not None and n not in self.dead]
        self.dead.update(name for name, _ in dead)
        return dead

    def process_alive(self, loop_name: str) -> bool:
        proc = self.processes.get(loop_name)
        return proc is not None and proc.exitcode is None and loop_name not in self.dead

    def loop_of(self, component: str) -> str | None:
        return self.component_loops.get(component)

    def kill_process(self, loop_name: str, reason: str) -> None:
        """SIGKILL a hung child; its death is then reported like any other, with ``reason``."""
        proc = self.processes.get(loop_name)
        if proc is not None and proc.exitcode is None:
            self.kill_reasons[loop_name] = reason
            proc.kill()

    def switch_inbox(self, loop_name: str) -> int:
        """Give a dead loop a fresh inbox before its new process starts; what was sent to the old one is dropped.
        Returns the spare's number."""
        spare = self._spares_used
        if spare >= len(self.spare_inboxes):
            raise RuntimeError(f"no spare inbox left for {loop_name}: more restarts than --max_restarts_total")
        self._spares_used += 1
        self.liveness.switch_inbox(loop_name, spare)
        return spare

    def watched_queues(self) -> dict:
        """Every inbox of the run by label (for the queue doctor): ``inbox of <loop>`` for the one a loop reads now,
        ``old inbox of <loop>`` / ``unused spare inbox <i>`` for the others."""
        chosen = {loop: self.liveness.spare_chosen(loop) for loop in self.inboxes}
        reader = {spare: loop for loop, spare in chosen.items() if spare >= 0}
        queues = {}
        for loop, inbox in self.inboxes.items():
            queues[f"{'old ' if chosen[loop] >= 0 else ''}inbox of {loop}"] = inbox
        for i, inbox in enumerate(self.spare_inboxes):
            queues[f"inbox of {reader[i]}" if i in reader else f"unused spare inbox {i}"] = inbox
        return queues

    def reader_of(self, label: str) -> str | None:
        """The loop that reads the queue ``label`` (of ``watched_queues``) now; None for an old or unused one."""
        prefix = "inbox of "
        return label[len(prefix) :] if label.startswith(prefix) else None

    def repair_weights(self, policy_id: int) -> None:
        """A learner died: its policy's published weights may be left locked mid-publish."""
        if self.shared is not None and policy_id < len(self.shared.weights):
            self.shared.weights[policy_id].recover_from_dead_writer()

    def _join_all(self) -> None:
        deadline = time.monotonic() + JOIN_TIMEOUT
        for name, proc in self.processes.items():
            proc.join(timeout=max(0.1, deadline - time.monotonic()))
            if proc.is_alive():
                log.warning("Process %s did not exit in time, terminating it", name)
                proc.kill()
                proc.join(timeout=5)
        if self.queue_doctor is not None:  # kept watching until every child is gone: one may die in a put
            self.queue_doctor.stop()
        for inbox in [*self.inboxes.values(), *self.spare_inboxes]:
            inbox.close()


class _ParallelRunnerComponent(RunnerComponent):
    """Adds child-process liveness checks and restarts (``respawn``) to the base runner component."""

    respawner: Respawner

    def check_processes(self) -> None:
        owner = self.owner
        self._act_on_queue_repairs()
        for name, code in owner.dead_processes():
            how = owner.kill_reasons.pop(name, None) or describe_exit(code)
            restartable = self.stop_requested_at is None and self.sampling_started_at is not None
            if restartable and self.respawner.process_died(name, how):
                continue
            owner.liveness.mark_exited(name)  # senders to its full inbox now fail instead of waiting
            components = [c for c in owner.process_components[name] if c not in self.stopped_trees]
            if not components:
                continue
            if self.stop_requested_at is None or code != 0:
                log.error("Process %s %s", name, how)
                self.status = ExperimentStatus.FAILURE
            self.request_stop()
            for component in components:
                if component not in self.stopped_trees:
                    self.on_component_stopped(component, "")
        if self.stop_requested_at is None and self.sampling_started_at is not None:
            self._kill_silent_processes()
            self.respawner.check_start_up(max(silence_limit(self.cfg), float(self.cfg.reset_timeout_seconds)))

    def _act_on_queue_repairs(self) -> None:
        """A repaired inbox whose messages were dropped: its reader missed messages, so it is restarted (killed, then
        restarted like any dead process); the runner's own cannot be, so the run stops."""
        owner = self.owner
        while owner.queue_repairs:
            repair = owner.queue_repairs.popleft()
            loop = owner.reader_of(repair.label)
            if not repair.emptied or loop is None or self.stop_requested_at is not None:
                continue
            if loop == RUNNER_LOOP:
                log.error("Stopping the run: %s, messages to the runner were lost", repair.describe())
                self.status = ExperimentStatus.FAILURE
                self.request_stop()
            elif owner.process_alive(loop) and not self.respawner.waiting_for(loop):
                owner.kill_process(loop, f"its inbox lost messages ({repair.describe()})")

    def _kill_silent_processes(self) -> None:
        """A process whose components sent no heartbeat for --heartbeat_timeout seconds hangs: kill it (it is then
        restarted like a dead one). Only ready components send heartbeats, so start-up is not judged here."""
        limit, now, owner = silence_limit(self.cfg), time.monotonic(), self.owner
        for loop_name, spec in owner.specs.items():
            if not owner.process_alive(loop_name):
                continue
            beats = [self.last_heartbeat[c] for c in spec.component_names if c in self.last_heartbeat]
            if beats and now - min(beats) > limit:
                silent = now - min(beats)
                owner.kill_process(loop_name, f"sent no heartbeat for {silent:.0f} s (--heartbeat_timeout={limit:.0f})")

    def forget_components(self, names: list[str]) -> None:
        """Components of a dead process: not ready, no heartbeat expected until they are back."""
        for name in names:
            self.ready.discard(name)
            self.last_heartbeat.pop(name, None)
            self.last_heartbeat_warning.pop(name, None)

    def component_back(self, name: str) -> None:
        self.respawner.component_ready(name)

    def on_restart_ack(self, token: int, name: str, payload: dict | None) -> None:
        self.respawner.on_ack(token, name, payload)

    def on_process_traceback(self, loop_name: str, tb: str) -> None:
        self.respawner.last_traceback[loop_name] = tb

    def on_component_error(self, name: str, tb: str) -> None:
        loop = self.owner.loop_of(name)
        if loop is not None:
            self.respawner.last_traceback[loop] = tb
        super().on_component_error(name, tb)

    def on_env_steps(self, policy_id: int, env_steps: int) -> None:
        lost = self.respawner.learner_resumed(policy_id, env_steps)
        if lost and self.initial_env_steps[policy_id] is not None:
            self.initial_env_steps[policy_id] -= lost  # the count of steps collected in this run stays put
        super().on_env_steps(policy_id, env_steps)

    def unreachable(self, name: str) -> bool:
        loop = self.owner.loop_of(name)
        return loop in self.owner.dead

    def request_stop(self, save: bool = True) -> None:
        if self.stop_requested_at is not None:
            return
        self.respawner.abort()
        super().request_stop(save)
        for loop_name in sorted(self.owner.dead):  # died and not replaced: nothing to stop there
            self.owner.liveness.mark_exited(loop_name)
            for component in self.owner.process_components[loop_name]:
                if component not in self.stopped_trees:
                    self.on_component_stopped(component, "")
