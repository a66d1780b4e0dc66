"""The parallel runner's child processes, seen from the runner: one owner for processes, inboxes and their repair.

:class:`ChildProcesses` starts a process per loop spec (``spawn``), knows which loop each component lives on, which
processes died (each death is told once) and why the runner killed one, gives a restarted loop a fresh inbox, and
runs the ``QueueDoctor`` that frees an inbox left locked by a process killed inside a put or get. It decides
nothing: what a death means for the run (a restart, or the end) is :mod:`~sample_factory.algo.runners.process_watch`'s
call, and the restart protocol is :mod:`~sample_factory.algo.runners.respawn`'s.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import time
from collections import deque
from multiprocessing.context import BaseContext
from typing import Any

import torch

from sample_factory.algo.runners.child_process import RUNNER_LOOP, child_main, shared_state_for
from sample_factory.algo.runners.components import LoopSpec, SharedState
from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.compat.multiprocessing_internals import stop_forked_server
from sample_factory.messaging.event_loop import LoopLiveness, Router, make_mp_inbox
from sample_factory.messaging.process_start import warm_up, worker_context
from sample_factory.messaging.queue_repair import QueueDoctor, QueueRepair, lock_holder, thread_alive
from sample_factory.utils.distributed import this_rank
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config

SPARE_INBOX_BYTES = 1024 * 1024
JOIN_TIMEOUT = 10.0


class ChildProcesses:
    """Processes, inboxes and liveness flags of one parallel run.

    ``specs`` are every loop of the run; those with ``in_main_process`` live on the runner's own loop and get no
    process. ``spare_inboxes`` is how many restarts the run may make: a restarted loop reads a fresh inbox (see
    ``LoopLiveness``), and queues cannot be shared with a process after it started, so they are made here, up front.
    """

    def __init__(self, specs: list[LoopSpec], shared: SharedState, spare_inboxes: int, context: BaseContext) -> None:
        self.shared = shared  # held for the whole run: children unpickle its semaphores and shared memory after start
        self.specs = {spec.name: spec for spec in specs if not spec.in_main_process}
        self.component_loops = {name: RUNNER_LOOP for name in _runner_loop_components(specs)}
        for spec in self.specs.values():
            self.component_loops.update(dict.fromkeys(spec.component_names, spec.name))
        self.inboxes = {RUNNER_LOOP: make_mp_inbox(), **{name: make_mp_inbox() for name in self.specs}}
        # shared by every process: a sender stuck on the full inbox of a dead loop fails instead of waiting forever
        self.liveness = LoopLiveness(self.inboxes, share=True)
        self.spare_inboxes = [make_mp_inbox(SPARE_INBOX_BYTES) for _ in range(max(0, spare_inboxes))]
        self.processes: dict[str, multiprocessing.Process] = {}
        self.dead: set[str] = set()  # loops whose process died (and was told) and has not been replaced yet
        self.kill_reasons: dict[str, str] = {}  # loops killed by the runner, and why
        self.queue_repairs: deque[QueueRepair] = deque()  # filled by the doctor's thread, read on the runner's loop
        self.queue_doctor = QueueDoctor(self.watched_queues, self.queue_repairs.append)
        self._spares_used = 0
        self._context = context
        self._spawn: tuple[Any, Router, Any] | None = None

    def router(self) -> Router:
        """A router over these inboxes (each process gets its own copy)."""
        return Router(self.component_loops, self.inboxes, self.liveness, self.spare_inboxes)

    def start_all(self, sf_context: Any) -> None:
        """Start the queue doctor and one process per loop spec; ``sf_context`` is the registries the children get."""
        self.queue_doctor.start()
        self._spawn = (self._context, self.router(), sf_context)
        for spec in self.specs.values():
            self.start(spec)
        log.info("Started %d processes", len(self.processes))

    def start(self, spec: LoopSpec, restart: RestartInfo | None = None) -> None:
        """Start the process of ``spec`` (again, in place of a dead one, when ``restart`` is given)."""
        ctx, child_router, sf_context = self._spawn
        shared = shared_state_for(spec, self.shared)
        if restart is not None:
            shared = dataclasses.replace(shared, restart=restart)
        old = self.processes.get(spec.name)
        if old is not None:
            old.join(timeout=1.0)  # reaps the dead one
        self.liveness.mark_alive(spec.name)
        proc = ctx.Process(
            target=child_main, args=(spec, child_router, shared, sf_context, os.getpid()), name=spec.name, daemon=False
        )
        proc.start()
        self.processes[spec.name] = proc
        self.dead.discard(spec.name)

    # ---------------------------------------------------------------- what the runner asks
    def dead_processes(self) -> list[tuple[str, int]]:
        """``(loop name, exit code)`` of every child that ended since the last call (each death is told once)."""
        dead = [(n, p.exitcode) for n, p in self.processes.items() if p.exitcode is not None and n not in self.dead]
        self.dead.update(name for name, _ in dead)
        return dead

    def alive(self, loop_name: str) -> bool:
        proc = self.processes.get(loop_name)
        return proc is not None and proc.exitcode is None and loop_name not in self.dead

    def loop_of(self, component: str) -> str | None:
        return self.component_loops.get(component)

    def components_of(self, loop_name: str) -> list[str]:
        return self.specs[loop_name].component_names

    def kill(self, loop_name: str, reason: str) -> None:
        """SIGKILL a hung child; its death is then told like any other, with ``reason`` (``death_reason``)."""
        proc = self.processes.get(loop_name)
        if proc is not None and proc.exitcode is None:
            self.kill_reasons[loop_name] = reason
            proc.kill()

    def death_reason(self, loop_name: str) -> str | None:
        """Why the runner killed ``loop_name``'s process (told once), or None when it died by itself."""
        return self.kill_reasons.pop(loop_name, None)

    def mark_exited(self, loop_name: str) -> None:
        """Nobody will read ``loop_name``'s inbox again: senders to it fail instead of waiting for room."""
        self.liveness.mark_exited(loop_name)

    def switch_inbox(self, loop_name: str) -> int:
        """Give a dead loop a fresh inbox before its new process starts; what was sent to the old one is dropped.
        Returns the spare's number."""
        spare = self._spares_used
        if spare >= len(self.spare_inboxes):
            raise RuntimeError(f"no spare inbox left for {loop_name}: more restarts than --max_restarts_total")
        self._spares_used += 1
        self.liveness.switch_inbox(loop_name, spare)
        return spare

    def repair_weights(self, policy_id: int) -> None:
        """A learner died: its policy's published weights may be left locked mid-publish."""
        if policy_id < len(self.shared.weights):
            self.shared.weights[policy_id].recover_from_dead_writer()

    def take_queue_repairs(self) -> list[QueueRepair]:
        """The repairs the doctor made since the last call."""
        repairs = []
        while self.queue_repairs:
            repairs.append(self.queue_repairs.popleft())
        return repairs

    # ---------------------------------------------------------------- inboxes, for the doctor and the stall message
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

    @staticmethod
    def reader_of(label: str) -> str | None:
        """The loop that reads the queue ``label`` (of ``watched_queues``) now; None for an old or unused one."""
        prefix = "inbox of "
        return label[len(prefix) :] if label.startswith(prefix) else None

    def describe_locked_queues(self) -> str:
        """For the stall message: the inboxes whose lock is held now, and by whom."""
        held = []
        for label, q in self.watched_queues().items():
            holder = lock_holder(q)
            if holder is not None:
                state = "alive" if holder and thread_alive(holder) else "no longer exists"
                held.append(f"the {label} is locked by thread {holder} ({state})")
        locked = "; ".join(held)
        return locked[:1].upper() + locked[1:] + ". " if held else "No inbox is locked now. "

    # ---------------------------------------------------------------- the end
    def kill_all(self) -> None:
        """Kill every child at once (the runner's own loop is stuck) and reap them."""
        for proc in self.processes.values():
            if proc.exitcode is None:
                proc.kill()
        for proc in self.processes.values():
            proc.join(timeout=5)

    def join_all(self) -> None:
        """Wait for every child to exit (killing those that do not in time), then stop the doctor, close inboxes."""
        deadline = time.monotonic() + JOIN_TIMEOUT
        for name, proc in self.processes.items():
            proc.join(timeout=max(0.1, deadline - time.monotonic()))
            if proc.is_alive():
                log.warning("Process %s did not exit in time, terminating it", name)
                proc.kill()
                proc.join(timeout=5)
        self.queue_doctor.stop()  # kept watching until every child is gone: one may die in a put
        stop_forked_server()  # every worker is gone: a server forked for this run ends with it
        for inbox in [*self.inboxes.values(), *self.spare_inboxes]:
            inbox.close()


def start_context(specs: list[LoopSpec], cfg: Config) -> BaseContext:
    """How the workers of ``specs`` start (``messaging.process_start``): the fork server is started at once, as a
    copy of this process where that is safe, else as a new interpreter that imports torch and the modules that build
    each loop's components while the runner reads the env and allocates buffers; never every worker on its own."""
    context = worker_context(_build_modules(specs))
    rank = this_rank()
    warm_up(context, uses_cuda=_uses_cuda(cfg), distributed=rank is not None and rank.world_size > 1)
    return context


def _uses_cuda(cfg: Config) -> bool:
    """Whether any process of the run may put something on a GPU (never with a torch built without CUDA)."""
    if not torch.backends.cuda.is_built():
        return False
    return cfg.device != "cpu" or bool(cfg.actor_worker_gpus)


def _build_modules(specs: list[LoopSpec]) -> list[str]:
    """The modules of the specs' ``build`` functions (plain functions or ``functools.partial`` of them)."""
    builds = [getattr(spec.build, "func", spec.build) for spec in specs]
    return sorted({build.__module__ for build in builds if getattr(build, "__module__", None)})


def _runner_loop_components(specs: list[LoopSpec]) -> list[str]:
    """The runner itself and the components built on its loop (``in_main_process``)."""
    return [RUNNER] + [name for spec in specs if spec.in_main_process for name in spec.component_names]
