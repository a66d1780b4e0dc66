"""What a child process does when the runner that started it is gone: close down, and never outlive it for long.

A runner can die at any instant (SIGKILL, OOM), including while it holds the lock of a faster-fifo queue: its own
inbox, which it reads all the time, or a child's inbox it is writing to. That lock is never released (see
``queue_repair``), and the repair thread that would free it lived in the runner. Every child that then sends to the
runner blocks inside ``put`` for good, with its event loop stuck, so a check of the parent made by that loop would
never run: measured in CI, a killed runner left its rollout workers and learner alive past 60 s.

So each child watches its parent from a thread of its own (``OrphanGuard``), which needs nothing from the event loop:

1. the parent's pid is gone: tell the loop to stop; mark the runner's loop exited in the shared liveness flags, so a
   sender waiting for room in the runner's inbox gives up (``UndeliverableMessage``) instead of waiting for ever;
   free every inbox this process uses whose lock a dead thread holds (the runner's repair, done by the orphan);
2. the loop then ends as usual and its components close their envs and simulators;
3. if the process still runs ``grace_s`` later (stuck somewhere no repair reaches), it exits on the spot.
"""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass
from typing import Any

from sample_factory.compat.faster_fifo_internals import layout_supported, release_if_dead_holder
from sample_factory.messaging.periodic_thread import PeriodicThread
from sample_factory.utils.logging_setup import log

CHECK_PERIOD_S = 1.0
GRACE_S = 10.0
ORPHAN_EXIT_CODE = 1


@dataclass(eq=False)
class OrphanGuard:
    """A daemon thread of a child process: once the parent ``parent_pid`` is gone, stop the loop, unblock it, and
    exit the process if it has not ended ``grace_s`` seconds later."""

    name: str
    parent_pid: int
    loop: Any
    runner_loop: str  # the runner loop's name in the shared liveness flags
    check_period_s: float = CHECK_PERIOD_S
    grace_s: float = GRACE_S

    def __post_init__(self) -> None:
        self.thread = PeriodicThread(f"{self.name}-orphan-guard", self.check_period_s, self.check)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """The loop ended normally: the guard has nothing more to do (not joined: a close-down may be waiting)."""
        self.thread.stop(join=False)

    def parent_gone(self) -> bool:
        """The runner exited. A worker forked from the fork server has that server as its OS parent, so the runner
        is watched through multiprocessing's parent sentinel when this process was started by it."""
        parent = multiprocessing.parent_process()
        if parent is not None and parent.pid == self.parent_pid:
            return not parent.is_alive()
        return os.getppid() != self.parent_pid

    def check(self) -> bool:
        """Close down once the parent is gone (True: the watch is over)."""
        if not self.parent_gone():
            return False
        self._close_down()
        return True

    def _close_down(self) -> None:
        log.error("%s: the runner process is gone, closing down", self.name)
        router = self.loop.router
        router.liveness.mark_exited(self.runner_loop)
        self.loop.stop()
        for label, q in self._queues(router).items():
            if layout_supported(q):
                # logged before the unlock: the loop blocked on this lock may end the process as soon as it is free
                release_if_dead_holder(q, label, before_unlock=self._log_repair)
        if self.thread.wait(self.grace_s):
            return
        log.error(
            "%s: still running %.0f s after the runner's death (stuck where no repair reaches), exiting now",
            self.name,
            self.grace_s,
        )
        os._exit(ORPHAN_EXIT_CODE)

    def _log_repair(self, repair: Any) -> None:
        log.warning("%s: queue repair after the runner's death: %s", self.name, repair.describe())

    @staticmethod
    def _queues(router: Any) -> dict[str, Any]:
        queues = {f"inbox of {name}": q for name, q in router.inboxes.items()}
        queues.update({f"spare inbox {i}": q for i, q in enumerate(router.spare_inboxes)})
        return queues
