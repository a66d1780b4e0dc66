"""Parallel runner: one process per rollout worker, per inference worker, and per policy's learner.

Children start from a fork server (``messaging/process_start``: a copy of the runner forked right after parsing
where that is safe, else Python's own ``forkserver``; ``spawn`` where neither exists) and ignore SIGINT/SIGTERM:
the runner alone decides when to stop and tells every component, so checkpoints get written (``child_process``).
Each child also watches its parent and exits if the runner disappears, so no orphan survives a crashed or killed
runner. A child that dies or stops sending heartbeats once training runs is restarted in place (``process_watch``,
``respawn``); one that dies during start-up ends the run, as a start-up failure is a bug to fix, not luck. A thread
of the runner (``QueueDoctor``, owned by ``child_processes``) unlocks any inbox left locked by a process killed
inside a put or get.

This class only assembles the parts: the processes (:class:`ChildProcesses`), the run's state on the main loop
(:class:`RunnerComponent`), the watch over the processes (:class:`ProcessWatch`) and a stall watchdog on the main
loop itself.
"""

from __future__ import annotations

from sample_factory.algo.runners.child_process import RUNNER_LOOP, pin_visible_gpus
from sample_factory.algo.runners.child_processes import ChildProcesses, start_context
from sample_factory.algo.runners.components import LoopSpec
from sample_factory.algo.runners.process_watch import ProcessWatch
from sample_factory.algo.runners.runner import Runner
from sample_factory.algo.runners.setup import make_shared_state, obtain_env_info
from sample_factory.algo.runners.start_up_signals import StopSignalsHeld
from sample_factory.algo.utils.checkpoints import list_checkpoints
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.cfg.validation import require_cfg_fits_env
from sample_factory.messaging.event_loop import EventLoop
from sample_factory.messaging.stall_watchdog import StallWatchdog, exit_with_failure
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.processes import pins_rollout_workers
from sample_factory.utils.typing import Config, StatusCode


class ParallelRunner(Runner):
    def __init__(self, cfg: Config, unique_name: str = "runner", **runner_inputs) -> None:
        super().__init__(cfg, unique_name, **runner_inputs)
        self.processes: ChildProcesses | None = None
        self.stall_watchdog: StallWatchdog | None = None

    def init(self) -> StatusCode:
        with StopSignalsHeld() as held:  # no death by SIGTERM halfway through a /dev/shm allocation
            return self._start(held)

    def _start(self, held: StopSignalsHeld) -> StatusCode:
        from sample_factory.algo.utils.context import sf_global_context

        cfg = self.cfg
        if not self.prepare_run():
            return ExperimentStatus.SUCCESS
        pin_visible_gpus(cfg)  # before the fork server starts: the workers inherit its environment
        specs = self.loop_specs()
        context = start_context(specs, cfg)
        env_info = self.given_env_info or obtain_env_info(cfg)
        self.timeline.mark("env_info")
        require_cfg_fits_env(cfg, env_info)
        if cfg.set_workers_cpu_affinity and not pins_rollout_workers(cfg):
            log.info(
                "Sync mode (--async_rl=False): rollout workers are not pinned to cores, the scheduler places them "
                "(faster here, see docs/architecture.md); pass --set_workers_cpu_affinity=True explicitly to pin them"
            )
        shared = make_shared_state(cfg, env_info, serial=False, weights=self.policy_weights)
        self.timeline.mark("buffers")
        # one fresh inbox per allowed restart (see LoopLiveness)
        spares = cfg.max_restarts_total if cfg.max_restarts > 0 and self.restarts else 0
        self.processes = processes = ChildProcesses(specs, shared, spares, context)
        router = processes.router()
        loop = EventLoop(RUNNER_LOOP, processes.inboxes[RUNNER_LOOP], router)
        self.component = self.make_component(env_info, router)
        self.component.attach(loop, specs)
        self.component.supervision = ProcessWatch(cfg, specs, processes, self.component.control, self.restarts)
        self._watch_own_loop(loop)
        self._build_in_main_process(specs, router, shared, loop)
        self.hooks.notify("on_connect_components")
        self.component.install_signal_handlers(held)
        processes.start_all(sf_global_context())
        return ExperimentStatus.SUCCESS

    def _watch_own_loop(self, loop: EventLoop) -> None:
        """The last line of defence: the runner's own loop blocked for good (``--heartbeat_timeout``)."""
        cfg = self.cfg
        if cfg.heartbeat_timeout <= 0:
            return
        self.stall_watchdog = StallWatchdog(
            float(cfg.heartbeat_timeout),
            float(cfg.reset_timeout_seconds),
            self._describe_queues_and_checkpoints,
            self._end_stalled_run,
            what="Parallel runner",
            cause="the runner's own event loop does not return (a queue operation that never ends, most likely)",
            advice="Every child process is killed; this is a bug, please report this message.",
        )
        loop.add_after_hook(self.stall_watchdog.beat)

    @staticmethod
    def _build_in_main_process(specs: list[LoopSpec], router, shared, loop: EventLoop) -> None:
        """Components that live on the runner's own loop (e.g. the sampling API's consumer)."""
        for spec in specs:
            if spec.in_main_process:
                for component in spec.build(router, shared):
                    loop.add_component(component)

    def run(self) -> StatusCode:
        if self.nothing_to_do:
            return ExperimentStatus.SUCCESS
        if self.stall_watchdog is not None:
            self.stall_watchdog.start()
        try:
            self.component.call_user_code(self.hooks.notify, "on_start")
            status = self.component.run_loop()
        finally:
            if self.stall_watchdog is not None:
                self.stall_watchdog.stop()
            self.processes.join_all()
            self.timeline.mark("processes_joined")
            self.timeline.log_shut_down()
        return status

    def _describe_queues_and_checkpoints(self) -> str:
        """For the stall message: inboxes whose lock is held now (by whom), and the checkpoint to resume from."""
        latest = [paths[-1] for p in range(self.cfg.num_policies) if (paths := list_checkpoints(self.cfg, p))]
        where = f"The latest checkpoint ({', '.join(latest)}) is complete." if latest else "No checkpoint was written."
        return self.processes.describe_locked_queues() + where

    def _end_stalled_run(self, message: str) -> None:
        """Called on the watchdog's thread: the runner's loop is stuck, so kill the children here and exit."""
        self.processes.kill_all()
        exit_with_failure(message)

    def request_stop_threadsafe(self) -> None:
        """Ask the runner to stop from another thread of this process (the sampling API's caller).

        Goes through the runner's inbox like any message, so the runner's loop thread does the stopping.
        """
        self.component.loop.post(RUNNER, "request_stop")
