"""SIGINT and SIGTERM while a run starts: held until the runner's own handlers take over, then an orderly stop.

A run's start-up allocates its shared memory (trajectory buffers, policy weights, liveness flags): torch creates each
block as a named file in ``/dev/shm``, sizes it, and removes the name a moment later. A process that dies in between
leaves the file behind until the machine reboots. SIGTERM's default action is such a death, and a launcher, Slurm
(``scancel``) or ``timeout`` sends SIGTERM to a run's whole process group, also while it starts. So from the first
step of ``Runner.init`` until the runner's component installs its handlers, a stop signal is only recorded and
logged; the run then stops in order as soon as its loop runs (status INTERRUPTED), exactly as for a signal received
later. A Python-level handler runs between bytecodes, never inside torch's allocation.

A second signal during start-up is not held: the handler that was there before (Ctrl+C's KeyboardInterrupt,
SIGTERM's default) acts at once, as a user pressing Ctrl+C twice expects. When start-up ends without handing over
(nothing to train, or an exception), the previous handlers come back and a held signal is delivered to them.
Off the main thread (a caller that runs the runner from a thread of its own) nothing is held: only the main thread
may set handlers.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

from sample_factory.utils.logging_setup import log

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignalsHeld:
    """A context for a runner's start-up: SIGINT/SIGTERM are recorded, not acted on, until :meth:`hand_over`."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignalsHeld:
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._hold) for sig in STOP_SIGNALS}
        return self

    def hand_over(self) -> list[int]:
        """The signals held so far, for handlers installed just before this call (a signal in between reaches them,
        not this object); nothing is restored or delivered at the end of the context."""
        self._previous = {}
        return list(self.received)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._previous:
            return  # handed over, or never held (not the main thread)
        self._restore()
        for signum in self.received:
            signal.raise_signal(signum)  # to the previous handler: start-up ended without the runner's handlers

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if not self.received:
            self.received.append(signum)
            log.warning("Received %s while starting: the run stops in order once it has started (%s again: at once)",
                        name, name)  # fmt: skip
            return
        previous = self._previous.get(signum, signal.SIG_DFL)
        self._restore()
        self.received.clear()
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.raise_signal(signum)

    def _restore(self) -> None:
        previous, self._previous = self._previous, {}
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
