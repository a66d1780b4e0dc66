"""The state of a run that decides when it starts, whether its components are alive and when it must stop.

:class:`RunState` holds which components are ready, their heartbeats, the stop request, the status, the interrupt
set by the signal handlers and the ``done`` marker, and checks the stop conditions: an interrupt, rollout workers
stuck creating their envs, ``--train_for_env_steps``, ``--train_for_seconds``, components that do not stop in time.
The runner's component (``runner_component.RunnerComponent``) feeds it from its message slots; the stop conditions
act on the run only through :class:`RunEnd`, the part of the component made for them.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Protocol

from sample_factory.algo.runners.components import LoopSpec, component_kinds, rollout_worker_names
from sample_factory.algo.runners.start_up_signals import StopSignalsHeld
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, PolicyID, StatusCode
from sample_factory.utils.utils import experiment_dir

# --benchmark=True: a fixed amount of experience, no checkpoints and no done marker
BENCHMARK_ENV_STEPS = 1_000_000


class RunEnd(Protocol):
    """What the stop conditions may do to the run (the runner's component)."""

    def request_stop(self, save: bool = True) -> None: ...

    def reached_end(self) -> None:
        """``--train_for_*`` reached: the ``done`` marker and the evaluations due by now (``request_stop`` follows)."""

    def finish(self) -> None:
        """End the run's loop (here: the components left did not stop within ``stop_timeout``)."""

    def stop_timeout(self, still_running: list[str]) -> float:
        """Seconds a stopping run waits for ``still_running`` to stop."""

    def abandon(self, components: list[str], reason: str) -> None:
        """``components`` hang in user code: their processes are ended now (``run_control.Supervision.abandon``)."""


class RunState:
    """Readiness, heartbeats, the stop request, the status and the stop conditions of one run (module docstring)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.status: StatusCode = ExperimentStatus.SUCCESS
        self.component_names: list[str] = []
        self.component_kinds: dict[str, str] = {}  # name -> "rollout", "inference", "batcher" or "learner"
        self.rollout_workers: list[str] = []  # in worker order
        self.ready: set[str] = set()
        self.stopped_trees: dict[str, str] = {}  # component -> its profile tree, sent as it stopped
        self.last_heartbeat: dict[str, float] = {}
        self.last_heartbeat_warning: dict[str, float] = {}
        self.envs_starting_at: dict[str, float] = {}  # rollout worker -> when it began creating its envs
        self.sampling_started_at: float | None = None
        self.stop_requested_at: float | None = None
        self.finished_at: float | None = None
        self.train_started = time.monotonic()
        self.interrupted = False  # SIGINT/SIGTERM arrived: the next check stops the run

    def set_components(self, specs: list[LoopSpec]) -> None:
        """The components of the run's loops: their names, kinds and the rollout workers in worker order."""
        self.component_names = [name for spec in specs for name in spec.component_names]
        self.component_kinds = component_kinds(specs)
        self.rollout_workers = rollout_worker_names(specs)

    # ---------------------------------------------------------------- readiness and heartbeats
    def component_ready(self, name: str) -> None:
        self.ready.add(name)
        self.last_heartbeat[name] = time.monotonic()

    def all_ready(self) -> bool:
        return self.ready >= set(self.component_names)

    def heartbeat(self, name: str) -> None:
        self.last_heartbeat[name] = time.monotonic()

    def seconds_silent(self, components: list[str]) -> float | None:
        """Seconds since the least recent heartbeat of ``components`` (None before any of them was ready)."""
        beats = [self.last_heartbeat[c] for c in components if c in self.last_heartbeat]
        return time.monotonic() - min(beats) if beats else None

    def forget(self, names: list[str]) -> None:
        """Components of a dead process: not ready, no heartbeat expected until they are back."""
        for name in names:
            self.ready.discard(name)
            self.last_heartbeat.pop(name, None)
            self.last_heartbeat_warning.pop(name, None)

    def warn_silent_components(self) -> None:
        """A warning, at most once per ``--heartbeat_reporting_interval``, for each running component that sent no
        heartbeat for two heartbeat intervals."""
        now = time.monotonic()
        limit = 2 * self.cfg.heartbeat_interval
        for name, last in self.last_heartbeat.items():
            if name in self.stopped_trees or now - last < limit:
                continue
            if now - self.last_heartbeat_warning.get(name, 0.0) >= self.cfg.heartbeat_reporting_interval:
                log.warning("Component %s has not sent a heartbeat for %.0f s: it may be stuck", name, now - last)
                self.last_heartbeat_warning[name] = now

    # ---------------------------------------------------------------- stopping
    @property
    def stopping(self) -> bool:
        return self.stop_requested_at is not None

    def stop_requested(self) -> None:
        self.stop_requested_at = self.finished_at = time.monotonic()

    def component_stopped(self, name: str, tree: str) -> bool:
        """Record ``name``'s stop; True once every component has stopped."""
        self.stopped_trees[name] = tree
        return set(self.stopped_trees) >= set(self.component_names)

    def not_stopped(self) -> list[str]:
        return sorted(set(self.component_names) - set(self.stopped_trees))

    def check_stop_conditions(self, run: RunEnd, env_steps: dict[PolicyID, int]) -> None:
        """Periodic: stop the run when one of its stop conditions holds; give up on components that do not stop."""
        if self.stopping:
            missing = self.not_stopped()
            limit = run.stop_timeout(missing)
            if time.monotonic() - self.stop_requested_at > limit:
                log.error("Components did not stop within %.0f s: %s", limit, missing)
                run.finish()
        elif self.interrupted:
            self.status = ExperimentStatus.INTERRUPTED
            run.request_stop()
        elif self.sampling_started_at is None:
            self._check_start_up_time(run)
        elif self.target_reached(env_steps):
            self.stop_at_target(run)
        elif time.monotonic() - self.train_started > self.cfg.train_for_seconds:
            log.info("Reached --train_for_seconds=%d", self.cfg.train_for_seconds)
            run.reached_end()
            run.request_stop()

    def _check_start_up_time(self, run: RunEnd) -> None:
        """Rollout workers whose envs are not created and reset after ``--reset_timeout_seconds`` end the run."""
        now, limit = time.monotonic(), self.cfg.reset_timeout_seconds
        stuck = sorted(n for n, t in self.envs_starting_at.items() if n not in self.ready and now - t > limit)
        if not stuck:
            return
        log.error(
            "Not ready after --reset_timeout_seconds=%d: %s. Their envs did not finish being created and reset; "
            "fix the env's creation/reset, or raise --reset_timeout_seconds if it is just slow.",
            limit,
            ", ".join(stuck),
        )
        self.status = ExperimentStatus.FAILURE
        run.request_stop(save=False)  # nothing was trained yet
        run.abandon(stuck, f"was killed: its envs were not ready after --reset_timeout_seconds={limit}")

    def stop_at_target(self, run: RunEnd) -> None:
        """``target_env_steps`` reached: the end of training (with ``--benchmark``: no checkpoint, no marker)."""
        log.info(
            "Reached %d env steps (--train_for_env_steps=%d)", self.target_env_steps(), self.cfg.train_for_env_steps
        )
        if not self.cfg.benchmark:
            run.reached_end()
        run.request_stop(save=not self.cfg.benchmark)

    def target_env_steps(self) -> int:
        """``--train_for_env_steps``, capped at ``BENCHMARK_ENV_STEPS`` with ``--benchmark``."""
        if self.cfg.benchmark:
            return min(self.cfg.train_for_env_steps, BENCHMARK_ENV_STEPS)
        return self.cfg.train_for_env_steps

    def target_reached(self, env_steps: dict[PolicyID, int]) -> bool:
        """Every policy has its ``target_env_steps`` (the target is per policy)."""
        return all(steps >= self.target_env_steps() for steps in env_steps.values())

    def write_done_marker(self, env_steps: dict[PolicyID, int]) -> None:
        """The marker holds the env steps of the policy with the fewest: --train_for_env_steps is per policy, so
        that is the number a resumed run compares with its target (a sum would end multi-policy runs early)."""
        with open(os.path.join(experiment_dir(self.cfg), "done"), "w") as marker:
            marker.write(f"{min(env_steps.values())}\n")

    def install_signal_handlers(self, held: StopSignalsHeld | None = None) -> None:
        """SIGINT/SIGTERM set ``interrupted`` from now on (the stop conditions then stop the run in order). The
        signals ``held`` during start-up (``start_up_signals``) are taken over once these handlers are in place, so
        none falls between the two."""
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; a caller that starts us from another thread keeps its own

        def handler(signum, _frame):
            if not self.interrupted:
                log.warning("Received %s: stopping, saving checkpoints", signal.Signals(signum).name)
            self.interrupted = True

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)
        for signum in held.hand_over() if held is not None else ():
            handler(signum, None)

    def report_order(self) -> list[str]:
        """The components whose profile trees the final report shows: the first and last rollout workers (the
        others look alike), then every other component."""
        workers = self.rollout_workers
        chosen = workers[:1] + workers[-1:] if len(workers) > 1 else workers
        rest = [n for n in self.component_names if self.component_kinds.get(n, "rollout") != "rollout"]
        return chosen + rest
