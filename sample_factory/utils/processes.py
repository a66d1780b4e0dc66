"""Decisions about the OS processes of a run that do not depend on what the process does: CPU pinning; finding a
child of a run by its process title (tests and benchmarks that kill one); ending and reaping processes that do not
stop by themselves; leaving a finished command quickly."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterable
from typing import Any, NoReturn, Protocol

import psutil

from sample_factory.compat.python_internals import exit_handlers_runnable, run_exit_handlers


def pins_rollout_workers(cfg: Any) -> bool:
    """Whether rollout worker processes are pinned to cores (``cores_for_worker_process``) in this run.

    ``--set_workers_cpu_affinity`` pins them, except in sync mode (``--async_rl=False``) when the flag was left at its
    default. Sync mode alternates sampling and training, so while the workers sample the learner is idle and the
    inference worker is busy almost all the time (it rarely finds its inbox empty). With every core held by a pinned
    worker, it always shares a core with one: each reply wakes that worker, which preempts it, and the scheduler does
    not move a task that ran a moment ago to the other core, so it waits while that core idles. Left free, the
    scheduler gives it a core of its own. Measured on 2 cores (docs/benchmarks.md): sync CartPole +4-8 % FPS, sync
    doom_basic +4 %, while async runs are faster pinned (doom_basic 7 %), where the learner keeps every core busy.
    Typing the flag explicitly pins in sync mode too.
    """
    if not cfg.set_workers_cpu_affinity:
        return False
    if cfg.async_rl:
        return True
    explicit = cfg.cli_args
    return "set_workers_cpu_affinity" in explicit


def cores_for_worker_process(worker_idx: int, num_workers: int, cpu_count: int) -> list[int] | None:
    """The CPU cores rollout worker ``worker_idx`` of ``num_workers`` should be pinned to, or None to leave it free.

    Cores are numbered ``0 .. cpu_count - 1`` (the i-th core the run may use; a caller restricted by an affinity mask
    maps i to its i-th allowed core). Workers are spread evenly so no core runs more workers than another:

    - the workers that fill whole rounds over the cores (the first ``cpu_count * (num_workers // cpu_count)``)
      get one core each, round robin (worker ``i`` gets core ``i % cpu_count``);
    - the ``num_workers % cpu_count`` workers left over (all of them when ``cpu_count > num_workers``) each get a
      contiguous share of ``cpu_count / leftover`` cores (shares differ by at most one core), so that they are
      spread over every core instead of stacking a further worker on the first cores, and env threads have room.

    None when there is nothing to pin: a single core, where pinning cannot change anything.
    """
    if num_workers < 1 or cpu_count < 1:
        raise ValueError(
            f"cores_for_worker_process needs num_workers >= 1 and cpu_count >= 1, got {num_workers=}, {cpu_count=}"
        )
    if not 0 <= worker_idx < num_workers:
        raise ValueError(f"worker_idx={worker_idx} is not a worker of {num_workers} (0..{num_workers - 1})")
    if cpu_count == 1:
        return None
    in_full_rounds = num_workers // cpu_count * cpu_count
    if worker_idx < in_full_rounds:
        return [worker_idx % cpu_count]
    leftover = num_workers - in_full_rounds
    share = worker_idx - in_full_rounds
    return list(range(share * cpu_count // leftover, (share + 1) * cpu_count // leftover))


def set_process_cpu_affinity(worker_idx: int, num_workers: int) -> list[int] | None:
    """Pin this process to the cores :func:`cores_for_worker_process` gives worker ``worker_idx`` of ``num_workers``.

    The cores are chosen among those this process may run on (its current affinity mask: the i-th core of the run is
    the i-th allowed one), so a run restricted with ``taskset`` stays inside its cores. Returns the OS numbers of the
    cores pinned to, or None where nothing was pinned (one allowed core, or an OS without CPU affinity).
    """
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    cores = cores_for_worker_process(worker_idx, num_workers, len(allowed))
    if cores is None:
        return None
    pinned = [allowed[i] for i in cores]
    os.sched_setaffinity(0, pinned)
    return pinned


def pid_by_title(session: int, title: str) -> int:
    """The pid of the process in process group ``session`` whose title (``ps -o args``) starts with ``title``.

    Children of a parallel run are titled ``<components> [<experiment>]`` (e.g. ``learner_p0 batcher_p0 [x]``), so a
    test or benchmark can SIGKILL one of them without touching other runs on the machine. Linux ``/proc``.
    """
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) != session:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ProcessLookupError):
            continue
        if args.startswith(f"{title} "):
            return int(entry)
    raise LookupError(f"no process titled {title} in session {session}")


def exit_process(status: int | None) -> NoReturn:
    """End a finished command with exit code ``status`` (None: 0), without the interpreter's teardown of its modules.

    Once a command that imported torch returns, Python spends about 0.45 s of CPU clearing every module and the
    objects they hold before the process ends (``python -c "import torch"`` alone pays it): a tenth of a short run's
    fixed cost. Here everything an exit is relied on for happens as in ``sys.exit``: the atexit handlers run (log
    files flushed and closed, temporary folders removed, multiprocessing's children joined and its resources
    released) and stdout and stderr are flushed; then ``os._exit`` ends the process. Where a thread that is not a
    daemon still runs (the normal exit would wait for it), or ``status`` is not an int, this is ``sys.exit(status)``.
    For the ``__main__`` of command-line scripts only: code that called a library function expects it to return.
    """
    code = 0 if status is None else status
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]  # the running ones
    if not isinstance(code, int) or any(not t.daemon for t in others):
        sys.exit(status)
    if not exit_handlers_runnable():  # an unverified interpreter: the public exit, teardown included
        sys.exit(status)
    try:
        run_exit_handlers()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):  # closed, a broken pipe, or replaced by None
                pass
        os._exit(code & 0xFF)  # what the OS keeps of sys.exit's code too (-1 gives 255)


# ---- ending processes that do not stop by themselves ----------------------------------------------------------------


class _Joinable(Protocol):
    """A ``multiprocessing.Process``-like handle of a child process."""

    pid: int | None

    def join(self, timeout: float | None = None) -> None: ...

    def is_alive(self) -> bool: ...


_REAP_TIMEOUT_S = 5.0


def list_child_processes() -> list[psutil.Process]:
    """Every live descendant of this process (children, their children, ...); zombies are left out.

    A process that outlives the run that started it keeps its resources (GPU memory, shared memory, ports): this is
    what a run checks at exit to find such leftovers.
    """
    children = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                children.append(child)
        except psutil.NoSuchProcess:
            continue
    return children


def kill(proc_pid: int) -> None:
    """SIGKILL the process ``proc_pid`` and all its descendants (descendants first, so none is re-parented to init
    and missed). A process that has already exited is no error; reaping is the parent's job (:func:`kill_processes`)."""
    try:
        process = psutil.Process(proc_pid)
        tree = [*process.children(recursive=True), process]
    except psutil.NoSuchProcess:
        return
    for member in tree:
        try:
            member.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            continue


def kill_processes(processes: Iterable[_Joinable]) -> None:
    """SIGKILL each still-running ``multiprocessing.Process`` of ``processes`` with its descendants, then reap it.

    For the end of a run whose children stopped answering; the polite way is to ask them to stop and
    :func:`join_or_kill` each.
    """
    processes = list(processes)
    for process in processes:
        if process.pid is not None and process.is_alive():
            kill(process.pid)
    for process in processes:
        if process.pid is not None:
            process.join(timeout=_REAP_TIMEOUT_S)


def join_or_kill(process: _Joinable, timeout: float = 1.0) -> bool:
    """Wait up to ``timeout`` seconds for ``process`` to exit; if it is still running, SIGKILL it (and its descendants)
    and reap it. Returns True when the process exited by itself."""
    process.join(timeout=timeout)
    if not process.is_alive():
        return True
    if process.pid is not None:
        kill(process.pid)
        process.join(timeout=_REAP_TIMEOUT_S)
    return False
