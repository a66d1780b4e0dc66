"""A stall watchdog for serial mode, where one thread does everything (also used on the parallel runner's own loop).

In parallel mode a worker that stops sending heartbeats is killed and restarted by the runner. In serial mode there
is no other process to notice: an env step or a simulator that never returns would hang the whole run silently,
forever. This watchdog turns that into an error a user can act on: after ``--heartbeat_timeout`` seconds without a
single iteration of the event loop it logs where the main thread is stuck (its stack, usually inside the env's
``step``), names the last checkpoint, and ends the process with FAILURE. Nothing can be unwound from a thread that
does not return, so the process exits at once; checkpoints already on disk are complete (they are written
atomically).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Callable

from sample_factory.messaging.periodic_thread import PeriodicThread
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.utils import log

SERIAL_CAUSE = "something in the main thread does not return, most often an env step or a simulator that hangs"
SERIAL_ADVICE = (
    "Fix or time-limit the env, raise --heartbeat_timeout if single steps legitimately take that long, or train in "
    "parallel mode, where a hung worker is restarted."
)


def exit_with_failure(message: str) -> None:
    del message  # already logged
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(ExperimentStatus.FAILURE)


class StallWatchdog:
    """Calls ``on_stall`` once when ``beat()`` has not been called for ``timeout_s`` seconds.

    ``beat()`` costs one clock read, so the event loop calls it every iteration. Until the first beat the limit is
    ``startup_timeout_s`` instead: starting the components (creating envs and their first reset, building the model)
    happens before the loop's first iteration and may legitimately take longer than one iteration ever should.
    ``thread_ident`` is the watched thread (by default the thread that builds the watchdog), whose stack goes into the
    message.
    """

    def __init__(
        self,
        timeout_s: float,
        startup_timeout_s: float | None = None,
        where_to_resume: Callable[[], str] = lambda: "",
        on_stall: Callable[[str], None] = exit_with_failure,
        thread_ident: int | None = None,
        what: str = "Serial mode",
        cause: str = SERIAL_CAUSE,
        advice: str = SERIAL_ADVICE,
    ) -> None:
        self.timeout_s = timeout_s
        self.startup_timeout_s = timeout_s if startup_timeout_s is None else max(timeout_s, startup_timeout_s)
        self.beats = 0
        self.where_to_resume = where_to_resume
        self.on_stall = on_stall
        self.thread_ident = threading.get_ident() if thread_ident is None else thread_ident
        self.what, self.cause, self.advice = what, cause, advice
        self.last_beat = time.monotonic()
        self.thread = PeriodicThread("serial_stall_watchdog", min(1.0, timeout_s / 4), self.check)

    def beat(self) -> None:
        self.last_beat = time.monotonic()
        self.beats += 1

    def start(self) -> None:
        self.last_beat = time.monotonic()
        self.thread.start()

    def stop(self) -> None:
        self.thread.stop()

    def check(self) -> bool:
        """Report a stall (True: the watch is over) or let the watched thread go on."""
        silent = time.monotonic() - self.last_beat
        limit = self.timeout_s if self.beats else self.startup_timeout_s
        if silent <= limit:
            return False
        message = self.describe_stall(silent, limit)
        log.error("%s", message)
        self.on_stall(message)
        return True

    def describe_stall(self, silent_s: float, limit_s: float) -> str:
        """The error: how long, where the watched thread is now, what to do."""
        frame = sys._current_frames().get(self.thread_ident)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "(the thread has exited)\n"
        resume = self.where_to_resume()
        flags = f"--heartbeat_timeout={self.timeout_s:g}"
        if not self.beats:
            flags = f"the start-up limit: the larger of {flags} and --reset_timeout_seconds, {limit_s:g} s"
        return (
            f"{self.what}: the run made no progress for {silent_s:.1f} s ({flags}): {self.cause}. "
            f"It is stuck here:\n{stack}Ending the run with FAILURE. {self.advice}" + (f" {resume}" if resume else "")
        )
