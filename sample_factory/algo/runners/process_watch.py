"""What the death, silence or cut-off inbox of a worker process means for a parallel run.

Checked on the runner's loop every half second (``check``):

- a child that exited, or that the runner killed, is restarted in place when training runs and the caps allow it
  (:class:`~sample_factory.algo.runners.respawn.Respawner`); otherwise the run stops, with FAILURE unless the child
  ended cleanly after a stop request, except the evaluator's, whose end only ends the evaluations;
- an inbox that the queue doctor had to empty lost messages, so its reader is killed and then restarted like any
  dead process (the runner's own inbox cannot be replaced: the run stops);
- a process whose components sent no heartbeat for ``--heartbeat_timeout`` seconds hangs: it is killed, and then
  restarted like a dead one.

This module only decides. The processes belong to :class:`~sample_factory.algo.runners.child_processes.ChildProcesses`
and the state of the run to the runner's component, reached through ``run_control.RunControl``.
"""

from __future__ import annotations

import math

from sample_factory.algo.runners.child_process import RUNNER_LOOP
from sample_factory.algo.runners.child_processes import ChildProcesses
from sample_factory.algo.runners.components import LoopSpec
from sample_factory.algo.runners.respawn import Respawner, describe_exit
from sample_factory.algo.runners.run_control import RunControl
from sample_factory.utils.typing import Config


def silence_limit(cfg: Config) -> float:
    """Seconds without a heartbeat after which a process counts as hung (inf when the check is off)."""
    return float(cfg.heartbeat_timeout) if cfg.heartbeat_timeout > 0 else math.inf


class ProcessWatch:
    """The parallel runner's :class:`~sample_factory.algo.runners.run_control.Supervision`."""

    def __init__(
        self, cfg: Config, specs: list[LoopSpec], processes: ChildProcesses, run: RunControl, restarts_allowed: bool
    ) -> None:
        self.cfg = cfg
        self.processes = processes
        self.run = run
        self.respawner = Respawner(cfg, specs, processes, run, enabled=restarts_allowed)

    @property
    def restarts_total(self) -> int:
        return self.respawner.total

    # ---------------------------------------------------------------- periodic
    def check(self) -> None:
        self._act_on_queue_repairs()
        for name, code in self.processes.dead_processes():
            self._process_ended(name, code)
        if not self.run.stopping and self.run.sampling_started:
            self._kill_silent_processes()
            start_up_limit = max(silence_limit(self.cfg), float(self.cfg.reset_timeout_seconds))
            self.respawner.check_start_up(start_up_limit)

    def _process_ended(self, name: str, code: int) -> None:
        how = self.processes.death_reason(name) or describe_exit(code)
        restartable = not self.run.stopping and self.run.sampling_started
        if restartable and self.respawner.process_died(name, how):
            return
        self.processes.mark_exited(name)  # senders to its full inbox now fail instead of waiting
        components = [c for c in self.processes.components_of(name) if not self.run.is_stopped(c)]
        if not components:
            return
        if self.processes.specs[name].kind == "evaluator" and not self.run.stopping:
            for component in components:  # evaluation is an extra: its end does not end the training
                self.run.count_as_stopped(component)
            return
        if not self.run.stopping or code != 0:
            self.run.fail(f"Process {name} {how}")
        for component in components:
            self.run.count_as_stopped(component)

    def _act_on_queue_repairs(self) -> None:
        """A repaired inbox whose messages were dropped: its reader missed messages, so it is restarted (killed, then
        restarted like any dead process); the runner's own cannot be, so the run stops."""
        for repair in self.processes.take_queue_repairs():
            loop = self.processes.reader_of(repair.label)
            if not repair.emptied or loop is None or self.run.stopping:
                continue
            if loop == RUNNER_LOOP:
                self.run.fail(f"Stopping the run: {repair.describe()}, messages to the runner were lost")
            elif self.processes.alive(loop) and not self.respawner.waiting_for(loop):
                self.processes.kill(loop, f"its inbox lost messages ({repair.describe()})")

    def _kill_silent_processes(self) -> None:
        """A process whose components sent no heartbeat for --heartbeat_timeout seconds hangs: kill it (it is then
        restarted like a dead one). Only ready components send heartbeats, so start-up is not judged here."""
        limit = silence_limit(self.cfg)
        for loop_name in self.processes.specs:
            if not self.processes.alive(loop_name):
                continue
            silent = self.run.seconds_silent(self.processes.components_of(loop_name))
            if silent is not None and silent > limit:
                self.processes.kill(
                    loop_name, f"sent no heartbeat for {silent:.0f} s (--heartbeat_timeout={limit:.0f})"
                )

    # ---------------------------------------------------------------- messages the runner's component passes on
    def component_ready_again(self, name: str) -> None:
        self.respawner.component_ready(name)

    def on_restart_ack(self, token: int, name: str, payload: dict | None) -> None:
        self.respawner.on_ack(token, name, payload)

    def record_traceback(self, component_or_loop: str, tb: str) -> None:
        loop = self.processes.loop_of(component_or_loop) or component_or_loop
        self.respawner.last_traceback[loop] = tb

    def learner_resumed(self, policy_id: int, env_steps: int) -> int | None:
        return self.respawner.learner_resumed(policy_id, env_steps)

    def unreachable(self, component: str) -> bool:
        return self.processes.loop_of(component) in self.processes.dead

    def abandon(self, components: list[str], reason: str) -> None:
        """Kill the processes of ``components`` at once: a loop blocked in user code reads no stop request, and every
        other component of that loop is blocked with it. Their deaths are then told like any other (``check``)."""
        for loop_name in sorted({self.processes.loop_of(c) for c in components} - {None}):
            if self.processes.alive(loop_name):
                self.processes.kill(loop_name, reason)

    def stopping(self) -> None:
        """No more restarts; a dead loop that was not replaced has nothing left to stop."""
        self.respawner.abort()
        for loop_name in sorted(self.processes.dead):
            self.processes.mark_exited(loop_name)
            for component in self.processes.components_of(loop_name):
                self.run.count_as_stopped(component)
