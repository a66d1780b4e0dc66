"""A daemon thread that runs a check every few seconds, for the watchers that cannot rely on the event loop.

The runner's queue repair (``queue_repair.QueueDoctor``), the stall watchdog and a child's orphan guard each guard
against something that stops the event loop itself (a lock nobody releases, a step that never returns, a dead
parent), so a timer of that loop would never fire when it matters: each runs its check on a thread of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sample_factory.utils.logging_setup import log


class PeriodicThread:
    """Calls ``tick()`` every ``period_s`` seconds on a daemon thread named ``name``.

    A tick that returns True ends the thread (its watch is over); one that raises is logged and the watch goes on,
    since a watcher that died silently would leave the hang it guards against unnoticed. ``stop()`` wakes the
    thread at once, whatever the period.
    """

    def __init__(self, name: str, period_s: float, tick: Callable[[], bool | None]) -> None:
        self.name = name
        self.period_s = period_s
        self.tick = tick
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, join: bool = True) -> None:
        """End the watch; ``join`` waits for a tick in progress to return (not from the tick itself)."""
        self._stopped.set()
        thread = self._thread
        if join and thread is not None and thread is not threading.current_thread():
            thread.join()

    def stop_requested(self) -> bool:
        """Whether ``stop()`` was called: a tick that fails because its watch is being closed need not report it."""
        return self._stopped.is_set()

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s`` seconds; True as soon as ``stop()`` is called (a tick's interruptible wait)."""
        return self._stopped.wait(timeout_s)

    def join(self, timeout_s: float | None = None) -> None:
        """Wait up to ``timeout_s`` seconds for the thread to end (after ``stop(join=False)``, or a last tick)."""
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stopped.wait(self.period_s):
            try:
                if self.tick():
                    return
            except Exception:  # keep watching: see the class docstring
                log.exception("%s: check failed", self.name)
