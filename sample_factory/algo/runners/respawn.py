"""Restarting a dead or silent worker process in place (parallel mode), so that training goes on.

The runner reports every child that exited, or that it killed for sending no heartbeat for ``--heartbeat_timeout``
seconds. A restart then runs in three steps, one restart at a time (a second death waits its turn):

1. *lost*: the components that talk to the dead one hear of it and answer (``on_restart_ack``): inference workers
   forget the requests of a dead rollout worker and batchers report its slots they still hold (and keep what
   they free from now on); rollout workers hold back requests for a dead inference worker, and take back the
   slots a dead learner's batcher held, dropping its policy's trajectories until it is back;
2. *start*: once every answer is in, nothing that matters will be sent to the dead loop's inbox, so the loop is
   given a fresh inbox (the old one may be unusable, see ``LoopLiveness``) and a new process is started with
   what it needs to know (``RestartInfo``); a learner resumes from its latest checkpoint, an inference worker
   loads the published weights;
3. *back*: when its components report ready, the peers resume (requests re-issued, parked slots handed over,
   trajectories sent again) and a rollout worker begins sampling.

The evaluator has no peers: nothing waits for it, so it is simply started again and the runner asks it again for
the evaluation it lost. When it may not be restarted, training goes on without evaluations.

One restart at a time keeps the peers' view simple: a component that starts always finds the others up or
already known to be down. Caps: ``--max_restarts`` per process, ``--max_restarts_total`` in all, and a learner that
dies again within ``LEARNER_REPEAT_WINDOW_S`` of its restart stops the run (its checkpoint may be the cause).
"""

from __future__ import annotations

import itertools
import signal
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from sample_factory.algo.runners.child_processes import ChildProcesses
from sample_factory.algo.runners.components import LoopSpec
from sample_factory.algo.runners.run_control import RunControl
from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.utils.distributed import this_rank
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config

# a learner that dies again this soon after its restart is not restarted again
LEARNER_REPEAT_WINDOW_S = 60.0


def describe_exit(code: int | None) -> str:
    """Why a process ended, in words: a signal (SIGKILL is what the OOM killer sends) or an exit code."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (kill -9 or the kernel's out-of-memory killer)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exited with code {code}"


@dataclass
class _Restart:
    spec: LoopSpec
    token: int
    awaiting: set[str] = field(default_factory=set)
    withheld: dict[int, list[int]] = field(default_factory=dict)
    started_at: float | None = None  # when the new process was started


class Respawner:
    """The runner's bookkeeping of restarts: caps, the queue, and the three steps of the one under way.

    It owns the restart counters (``total`` is the run's count) and acts through two collaborators: ``processes``
    (start, kill, fresh inboxes) and ``run`` (messages to the peers, their readiness and the env-step counts).
    ``enabled`` is False when this run makes no restarts at all: ``--max_restarts=0``, or a sampler-only run, whose
    consumers take no part in the protocol.
    """

    def __init__(
        self, cfg: Config, specs: list[LoopSpec], processes: ChildProcesses, run: RunControl, enabled: bool = True
    ) -> None:
        self.cfg = cfg
        self.processes = processes
        self.run = run
        self.specs = {spec.name: spec for spec in specs if not spec.in_main_process}
        self.enabled = enabled and cfg.max_restarts > 0
        self.queue: deque[str] = deque()
        self.current: _Restart | None = None
        self.restarts: Counter[str] = Counter()
        self.total = 0
        self.last_traceback: dict[str, str] = {}
        self.learner_back_at: dict[str, float] = {}
        self.steps_before: dict[int, int] = {}  # policy -> env steps when its learner died
        self._tokens = itertools.count(1)

    # ---------------------------------------------------------------- deaths
    def process_died(self, name: str, how: str) -> bool:
        """Queue a restart of loop ``name``; False (with the reason logged) when the run must stop instead."""
        refusal = self._refusal(name)
        if refusal is not None:
            tb = self.last_traceback.get(name, "(none: the process left no Python traceback)")
            spec = self.specs.get(name)
            outcome = "No more evaluations in this run" if spec and spec.kind == "evaluator" else "Stopping the run"
            log.error("%s: %s; not restarted: %s. %s. Its last traceback:\n%s", name, how, refusal, outcome, tb)
            return False
        self.restarts[name] += 1
        self.total += 1
        log.warning(
            "Restarting %s: %s; restart %d of --max_restarts=%d for it, %d of --max_restarts_total=%d",
            name, how, self.restarts[name], self.cfg.max_restarts, self.total, self.cfg.max_restarts_total,
        )  # fmt: skip
        spec = self.specs[name]
        self.run.forget_components(spec.component_names)
        if spec.kind == "learner":
            self.processes.repair_weights(spec.policy_id)
            self.steps_before.setdefault(spec.policy_id, self.run.env_steps_of(spec.policy_id))
        current = self.current
        if current is not None and current.spec.name == name:
            self.current = None  # died while being restarted: begin again, before anything else
            self.queue.appendleft(name)
        else:
            if current is not None:
                current.awaiting.difference_update(spec.component_names)
            self.queue.append(name)
        self.advance()
        return True

    def _refusal(self, name: str) -> str | None:
        cfg = self.cfg
        if not self.enabled:
            return "restarts are off (--max_restarts=0, or a sampler-only run)"
        if name not in self.specs:
            return "it is not a restartable worker"
        if self.restarts[name] >= cfg.max_restarts:
            return f"it was restarted {self.restarts[name]} times already (--max_restarts={cfg.max_restarts})"
        if self.total >= cfg.max_restarts_total:
            return f"{self.total} restarts in this run already (--max_restarts_total={cfg.max_restarts_total})"
        if self.specs[name].kind == "learner" and this_rank() is not None:
            return (
                "a learner of a distributed run cannot rejoin the other ranks' process group (torchrun "
                "--max-restarts restarts the whole job from the last checkpoint)"
            )
        back_at = self.learner_back_at.get(name)
        if back_at is not None and time.monotonic() - back_at < LEARNER_REPEAT_WINDOW_S:
            return f"it died again {time.monotonic() - back_at:.0f} s after its last restart"
        return None

    def waiting_for(self, name: str) -> bool:
        """Loop ``name`` is dead and queued (or being) restarted."""
        return name in self.queue or (self.current is not None and self.current.spec.name == name)

    # ---------------------------------------------------------------- the steps
    def advance(self) -> None:
        """Move the restart under way on as far as it can go; begin the next one when it is done."""
        while True:
            if self.current is None:
                if not self.queue:
                    return
                self._begin(self.specs[self.queue.popleft()])
            current = self.current
            if current.awaiting or current.started_at is not None:
                return
            self._start(current)
            return

    def _begin(self, spec: LoopSpec) -> None:
        """Step 1: tell the peers; they answer with ``on_restart_ack``."""
        current = self.current = _Restart(spec, next(self._tokens))
        peers, slot, arg = self._peers_and_message(spec)
        for peer in peers:
            if self._alive(peer):
                current.awaiting.add(peer)
                self.run.send(peer, slot, arg, current.token)

    def _peers_and_message(self, spec: LoopSpec) -> tuple[list[str], str, Any]:
        kinds = self.run.component_kinds
        if spec.kind == "evaluator":
            return [], "", None  # nobody waits for it
        if spec.kind == "rollout":
            peers = [n for n, k in kinds.items() if k in ("inference", "batcher")]
            return peers, "on_rollout_worker_lost", spec.worker_idx
        rollout = list(self.run.rollout_workers)
        if spec.kind == "inference":
            return rollout, "on_inference_worker_lost", spec.name
        return rollout, "on_learner_lost", spec.policy_id

    def _alive(self, component: str) -> bool:
        loop = self.processes.loop_of(component)
        return loop is not None and not self.waiting_for(loop) and self.processes.alive(loop)

    def on_ack(self, token: int, name: str, payload: dict | None) -> None:
        current = self.current
        if current is None or token != current.token:
            return
        current.awaiting.discard(name)
        if payload:
            for policy, slots in payload.items():
                current.withheld.setdefault(policy, []).extend(slots)
        self.advance()

    def _start(self, current: _Restart) -> None:
        """Step 2: nothing that matters will reach the old inbox any more: empty it and start the new process."""
        spec = current.spec
        self.processes.switch_inbox(spec.name)
        info = RestartInfo(incarnation=self.restarts[spec.name], withheld_slots=current.withheld)
        self.processes.start(spec, info)
        current.started_at = time.monotonic()
        log.info("Started %s again", spec.name)

    def component_ready(self, name: str) -> bool:
        """Step 3 once every component of the new process is ready; True when ``name`` was one of them."""
        current = self.current
        if current is None or current.started_at is None or name not in current.spec.component_names:
            return False
        if all(self.run.is_ready(n) for n in current.spec.component_names):
            self._back(current)
        return True

    def _back(self, current: _Restart) -> None:
        spec, run = current.spec, self.run
        log.info("%s is back after %.1f s", spec.name, time.monotonic() - current.started_at)
        if spec.kind == "rollout":
            for name, kind in run.component_kinds.items():
                if kind == "batcher" and self._alive(name):
                    run.send(name, "on_rollout_worker_restarted", spec.worker_idx)
            for name in spec.component_names:
                run.resume_rollout_worker(name)
        elif spec.kind == "inference":
            for name in run.rollout_workers:
                if self._alive(name):
                    run.send(name, "on_inference_worker_restarted", spec.name)
        elif spec.kind == "learner":
            self.learner_back_at[spec.name] = time.monotonic()
            for name in run.rollout_workers:
                if self._alive(name):
                    run.send(name, "on_learner_restarted", spec.policy_id)
        self.current = None
        self.advance()

    def check_start_up(self, limit: float) -> None:
        """A new process that is not ready after ``limit`` seconds hangs like its predecessor may have: kill it."""
        current = self.current
        if current is None or current.started_at is None or time.monotonic() - current.started_at < limit:
            return
        name = current.spec.name
        if self.processes.alive(name):
            self.processes.kill(name, f"not ready {limit:.0f} s after its restart")

    def learner_resumed(self, policy_id: int, env_steps: int) -> int | None:
        """The env steps lost by the restart of ``policy_id``'s learner (None if it was not restarted)."""
        before = self.steps_before.pop(policy_id, None)
        if before is None:
            return None
        lost = max(0, before - env_steps)
        log.warning(
            "Learner of policy %d resumed from its latest checkpoint at %d env steps: %d env steps of training lost",
            policy_id, env_steps, lost,
        )  # fmt: skip
        return lost

    def abort(self) -> None:
        """The run is stopping: no more restarts."""
        self.enabled = False
        self.queue.clear()
        self.current = None
