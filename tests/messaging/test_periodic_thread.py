"""The watchers' background thread: it ticks until a tick says the watch is over or it is stopped, survives a tick
that raises, and wakes at once when stopped."""

from __future__ import annotations

import threading
import time

from sample_factory.messaging.periodic_thread import PeriodicThread


def running(name: str) -> bool:
    """Whether a thread of that name runs in this process (the watcher's thread carries the name it was given)."""
    return any(thread.name == name for thread in threading.enumerate())


def test_ticks_until_a_tick_ends_the_watch():
    ticks: list[int] = []
    thread = PeriodicThread("counting", 0.001, lambda: ticks.append(len(ticks)) or len(ticks) == 5)
    thread.start()
    thread.join(10)
    assert not running("counting")
    assert ticks == [0, 1, 2, 3, 4]


def test_a_tick_that_raises_is_logged_and_the_watch_goes_on(caplog):
    calls: list[int] = []

    def tick() -> bool:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a broken check")
        return True

    thread = PeriodicThread("flaky", 0.001, tick)
    thread.start()
    thread.join(10)
    assert len(calls) == 2
    assert "flaky: check failed" in caplog.text and "a broken check" in caplog.text


def test_stop_wakes_a_long_period_at_once_and_joins():
    ticked = threading.Event()
    thread = PeriodicThread("slow", 3600.0, ticked.set)
    thread.start()
    started = time.monotonic()
    thread.stop()
    assert time.monotonic() - started < 10
    assert not running("slow") and not ticked.is_set()


def test_wait_inside_a_tick_returns_when_stopped():
    waiting, outcome = threading.Event(), []

    def tick() -> bool:
        waiting.set()
        outcome.append(thread.wait(3600.0))  # a grace period, cut short by stop()
        return True

    thread = PeriodicThread("grace", 0.001, tick)
    thread.start()
    assert waiting.wait(10)
    thread.stop(join=False)
    thread.join(10)
    assert outcome == [True] and not running("grace")


def test_stop_from_the_tick_itself_does_not_deadlock():
    thread = PeriodicThread("self-stopping", 0.001, lambda: thread.stop())
    thread.start()
    thread.join(10)
    assert not running("self-stopping")


def test_stop_requested_tells_a_tick_that_its_watch_is_closing():
    thread = PeriodicThread("closing", 3600.0, lambda: None)
    assert not thread.stop_requested()
    thread.start()
    thread.stop()
    assert thread.stop_requested()
