"""How worker processes are started: forked from a server that has already imported torch and the workers' code.

A worker process started with ``spawn`` is a fresh interpreter: it imports torch and the package again (about
2 s of CPU each; a run of 2 rollout workers, an inference worker and a learner pays it four times, on a machine
whose cores the run needs). Python's ``forkserver`` start method runs one clean server process that imports the
modules named in its preload list once; every worker is then forked from it, with those modules already loaded.
The server is single-threaded and has run no torch operation, so forking it is safe (no OpenMP team or CUDA
context to inherit), and workers get what ``spawn`` gives them otherwise: their arguments by pickling (shared
tensors and queues by file descriptor), the user's main module imported again, a fresh start for everything else.

The server itself is a copy of the runner made with ``fork()`` where that is safe
(``compat.multiprocessing_internals``), so even its one round of imports is saved; ``SF_FORK_SERVER_FROM_RUNNER=0``
always starts it as a new interpreter.

Where the platform has no fork server (Windows), workers are spawned. ``SF_WORKER_START_METHOD=spawn`` forces
``spawn`` (a switch for debugging and measuring; the fork server is the default).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterable
from multiprocessing.context import BaseContext

from sample_factory.compat import multiprocessing_internals as forked_server
from sample_factory.utils.logging_setup import log

START_METHOD_ENV = "SF_WORKER_START_METHOD"
FORK_FROM_RUNNER_ENV = "SF_FORK_SERVER_FROM_RUNNER"  # "0": the fork server is always a new interpreter
ALWAYS_PRELOADED = ("torch",)


def start_method() -> str:
    """``forkserver`` where available, unless ``SF_WORKER_START_METHOD`` asks for ``spawn``."""
    wanted = os.environ.get(START_METHOD_ENV, "forkserver")
    if wanted not in ("forkserver", "spawn"):
        raise ValueError(f"{START_METHOD_ENV}={wanted!r}: use forkserver (the default) or spawn")
    if wanted == "forkserver" and "forkserver" not in multiprocessing.get_all_start_methods():
        return "spawn"
    return wanted


def worker_context(preload: Iterable[str] = ()) -> BaseContext:
    """The multiprocessing context to start workers with; the fork server imports ``preload`` (module names) first.

    The preload list takes effect when the server starts, i.e. with the first worker of this process (or
    ``warm_up``); later calls keep the running server and its modules.
    """
    method = start_method()
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(sorted({*ALWAYS_PRELOADED, *preload}))
    return ctx


def warm_up(ctx: BaseContext, uses_cuda: bool = True, distributed: bool = True) -> None:
    """Start the fork server now: forked from this process where that is safe
    (``compat.multiprocessing_internals``: no imports to wait for), else a new interpreter whose imports run while
    this process does other start-up work.

    ``uses_cuda`` / ``distributed``: whether the run puts a model on a GPU / is one rank of several (either rules
    the forked server out). One log line says which server the workers come from.
    """
    if ctx.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    try:
        if _fork_server_here(uses_cuda, distributed):
            return
        forkserver.ensure_running()
    except OSError as exc:  # e.g. no room for its socket: the first worker start retries and reports
        log.debug("Fork server did not start early (%s): it starts with the first worker", exc)


def _fork_server_here(uses_cuda: bool, distributed: bool) -> bool:
    """Fork the server from this process where allowed and safe; False when the usual server must start."""
    forked_server.stop_forked_server()  # a copy left by an earlier run of this process (one that failed to start)
    if forked_server.usual_server_running():
        return False  # a new-interpreter server of an earlier run of this process: workers keep coming from it
    if os.environ.get(FORK_FROM_RUNNER_ENV, "1") == "0":
        blocker = f"{FORK_FROM_RUNNER_ENV}=0"
    else:
        blocker = forked_server.fork_blocker(uses_cuda, distributed)
    if blocker is not None:
        log.info("Workers start from a new fork server process: it imports torch again (%s)", blocker)
        return False
    forked_server.start_forked_server()
    log.info("Workers start from a copy of this process (torch and the package already imported)")
    return True
