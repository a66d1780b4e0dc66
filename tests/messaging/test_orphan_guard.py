"""The orphan guard of a child process: it acts only once the parent is gone, and a process stuck for good still
exits (the end-to-end case, a runner killed holding its inbox's lock, is in ``test_failures``)."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

from sample_factory.compat.faster_fifo_internals import thread_alive
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, LoopLiveness, Router
from sample_factory.messaging.orphan_guard import OrphanGuard

RUNNER_LOOP = "runner"


def _loop() -> EventLoop:
    inboxes = {RUNNER_LOOP: LocalInbox(), "child": LocalInbox()}
    router = Router({}, inboxes, LoopLiveness(inboxes))
    return EventLoop("child", inboxes["child"], router)


def _guard_running() -> bool:
    return any(thread.name == "child-orphan-guard" for thread in threading.enumerate())


def test_guard_leaves_a_loop_alone_while_the_parent_lives():
    """Twenty checks in a row find the parent alive: each leaves the loop running and the guard watching."""
    loop = _loop()
    loop.running = True
    guard = OrphanGuard("child", os.getppid(), loop, RUNNER_LOOP, check_period_s=0.01, grace_s=0.01)
    checked, results = threading.Event(), []

    def counted_check() -> bool:
        results.append(guard.check())
        if len(results) == 20:
            checked.set()
        return results[-1]

    guard.thread.tick = counted_check
    guard.start()
    assert checked.wait(10), f"the guard stopped checking after {len(results)} checks"
    assert _guard_running() and not any(results)
    guard.stop()
    guard.thread.join(5)
    assert not _guard_running()
    assert loop.running and not loop.router.liveness.exited(RUNNER_LOOP)


def _stuck_orphan(report, parent_pid: int) -> None:
    """Runs as a grandchild of the test: a guard whose loop never ends, so only the grace exit can end it."""
    loop = _loop()
    loop.running = True
    OrphanGuard("stuck", parent_pid, loop, RUNNER_LOOP, check_period_s=0.05, grace_s=0.5).start()
    report.put(os.getpid())
    threading.Event().wait()  # stuck for good, as in a put on a lock nobody releases


def _parent_of_stuck_orphan(report) -> None:
    ctx = multiprocessing.get_context("spawn")
    ctx.Process(target=_stuck_orphan, args=(report, os.getpid()), daemon=False).start()
    # returns at once, without joining: the grandchild is orphaned
    os._exit(0)


def test_a_stuck_orphan_exits_after_the_grace_period():
    ctx = multiprocessing.get_context("spawn")
    report = ctx.Queue()
    parent = ctx.Process(target=_parent_of_stuck_orphan, args=(report,))
    parent.start()
    orphan_pid = report.get(timeout=60)
    parent.join(30)
    assert parent.exitcode == 0
    deadline = time.monotonic() + 30
    while thread_alive(orphan_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not thread_alive(orphan_pid), "the orphan outlived its parent by 30 s"
