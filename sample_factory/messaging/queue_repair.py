"""The runner's watch over its faster-fifo queues: a thread that frees a queue whose lock was left held by a process
that died inside ``put`` or ``get`` (the repair itself, which reads faster-fifo's and glibc's memory layout, is
:mod:`sample_factory.compat.faster_fifo_internals`).

The watch costs nothing on the path of a message: every ``period_s`` it reads each queue's mutex words from shared
memory (no system call); a queue held by a thread that no longer exists is mended and unlocked, and the repair is
logged and handed to the runner (the loop that reads a queue whose contents were dropped must be restarted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sample_factory.compat.faster_fifo_internals import (
    QueueRepair,
    layout_supported,
    lock_holder,
    release_if_dead_holder,
    repair_unavailable,
    thread_alive,
)
from sample_factory.messaging.periodic_thread import PeriodicThread
from sample_factory.utils.logging_setup import log

__all__ = ["QueueDoctor", "QueueRepair", "layout_supported", "lock_holder", "release_if_dead_holder", "thread_alive"]
DEFAULT_PERIOD_S = 0.25


class QueueDoctor:
    """A thread that frees queues left locked by dead processes (see the module docstring).

    ``queues()`` returns the queues to watch by label (called on every check, so new ones are seen); each repair is
    logged and passed to ``on_repair`` (called on this thread: it must only record it, e.g. in a deque).
    """

    def __init__(
        self,
        queues: Callable[[], dict[str, Any]],
        on_repair: Callable[[QueueRepair], None] = lambda repair: None,
        period_s: float = DEFAULT_PERIOD_S,
    ) -> None:
        self.queues = queues
        self.on_repair = on_repair
        self.period_s = period_s
        self.repairs = 0
        self._supported: dict[int, bool] = {}
        self._said_unavailable = False
        self.thread = PeriodicThread("queue_doctor", period_s, self._check)

    def check_once(self) -> list[QueueRepair]:
        """Look at every queue once; repair those held by dead threads."""
        done = []
        for label, q in self.queues().items():
            if not self._is_supported(label, q):
                continue
            repair = release_if_dead_holder(q, label)
            if repair is not None:
                self.repairs += 1
                log.warning("Queue repair: %s", repair.describe())
                self.on_repair(repair)
                done.append(repair)
        return done

    def _is_supported(self, label: str, q: Any) -> bool:
        supported = self._supported.get(id(q))
        if supported is None:
            supported = self._supported[id(q)] = layout_supported(q)
            why = repair_unavailable()
            if not supported and why is None:
                log.warning(
                    "The %s does not look like a faster-fifo 1.5 queue: a process killed inside a put or get on it "
                    "can hang the run (no repair possible)",
                    label,
                )
            elif not supported and not self._said_unavailable:
                self._said_unavailable = True
                log.info("Queue repair is off (%s): a process killed inside a put or get can hang the run", why)
        return supported

    def _check(self) -> None:
        self.check_once()  # the repairs went to on_repair; the watch never ends by itself

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.thread.stop()
