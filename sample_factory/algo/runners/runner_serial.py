"""Serial runner: every component on one event loop in this process.

For debugging and profiling (``python -m cProfile ...``): no processes, no
threads, deterministic message order. The components are the very same as in
parallel mode.
"""

from __future__ import annotations

import torch

from sample_factory.algo.runners.runner import Runner
from sample_factory.algo.runners.setup import make_shared_state, obtain_env_info
from sample_factory.algo.runners.start_up_signals import StopSignalsHeld
from sample_factory.algo.utils.checkpoints import list_checkpoints
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.cfg.validation import require_cfg_fits_env
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router
from sample_factory.messaging.stall_watchdog import StallWatchdog
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode

LOOP = "main"


class SerialRunner(Runner):
    def __init__(self, cfg: Config, unique_name: str = "runner", **runner_inputs) -> None:
        super().__init__(cfg, unique_name, **runner_inputs)
        self.watchdog: StallWatchdog | None = None

    def init(self) -> StatusCode:
        with StopSignalsHeld() as held:  # no death by SIGTERM halfway through a /dev/shm allocation
            return self._start(held)

    def _start(self, held: StopSignalsHeld) -> StatusCode:
        if not self.prepare_run():
            return ExperimentStatus.SUCCESS
        env_info = self.given_env_info or obtain_env_info(self.cfg)
        self.timeline.mark("env_info")
        require_cfg_fits_env(self.cfg, env_info)
        shared = make_shared_state(self.cfg, env_info, serial=True, weights=self.policy_weights)
        self.timeline.mark("buffers")
        specs = self.loop_specs()
        names = [n for spec in specs for n in spec.component_names]
        router = Router({n: LOOP for n in names + [RUNNER]}, {LOOP: LocalInbox()})
        loop = EventLoop(LOOP, router.inboxes[LOOP], router, idle_timeout=0.001)
        self.component = self.make_component(env_info, router)
        self.component.attach(loop, specs)
        for spec in specs:
            for component in spec.build(router, shared):
                loop.add_component(component)
        # torch threads are per process: the learner's value would be overwritten by the inference worker's
        # on_start (1 thread), so set it once every component has started (timers first fire after on_start)
        num_threads = max(1, self.cfg.learner_main_loop_num_cores)
        loop.call_later(0.0, lambda: torch.set_num_threads(num_threads))
        if self.cfg.heartbeat_timeout > 0:  # a hung env step would otherwise hang the whole run silently
            startup = float(self.cfg.reset_timeout_seconds)
            self.watchdog = StallWatchdog(float(self.cfg.heartbeat_timeout), startup, self._where_to_resume)
            loop.add_after_hook(self.watchdog.beat)
        self.hooks.notify("on_connect_components")
        self.component.install_signal_handlers(held)
        return ExperimentStatus.SUCCESS

    def run(self) -> StatusCode:
        if self.nothing_to_do:
            return ExperimentStatus.SUCCESS
        self.component.call_user_code(self.hooks.notify, "on_start")
        if self.watchdog is not None:
            self.watchdog.start()
        try:
            return self.component.run_loop()
        finally:
            if self.watchdog is not None:
                self.watchdog.stop()
            self.timeline.log_shut_down()

    def _where_to_resume(self) -> str:
        latest = [paths[-1] for p in range(self.cfg.num_policies) if (paths := list_checkpoints(self.cfg, p))]
        if not latest:
            return "No checkpoint was written before the stall."
        return f"The latest checkpoint ({', '.join(latest)}) is complete: the same command resumes from it."
