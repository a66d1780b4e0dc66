"""The event loop delivers messages locally and across loops, batches them, runs timers and stops cleanly;
a full inbox is back-pressure, never a dropped message."""

from __future__ import annotations

import queue
import threading
import time

import pytest

from sample_factory.messaging import event_loop
from sample_factory.messaging.event_loop import (
    Component,
    EventLoop,
    LocalInbox,
    LoopLiveness,
    Router,
    UndeliverableMessage,
    make_mp_inbox,
)


class Recorder(Component):
    def __init__(self, name: str, router: Router) -> None:
        super().__init__(name, router)
        self.received: list = []
        self.flushes = 0

    def on_value(self, value: int) -> None:
        self.received.append(value)
        if value < 3:
            self.send(self.name, "on_value", value + 1)  # local follow-up messages

    def after_messages(self) -> None:
        if self.received:
            self.flushes += 1


def test_local_messages_are_processed_in_order():
    router = Router({"a": "main"}, {"main": LocalInbox()})
    loop = EventLoop("main", router.inboxes["main"], router)
    a = Recorder("a", router)
    loop.add_component(a)
    a.send("a", "on_value", 0)
    loop.running = True
    loop.run_once()
    assert a.received == [0, 1, 2, 3]
    assert a.flushes == 1  # one after-messages call for the whole drained batch


def test_messages_to_other_loops_go_through_their_inbox():
    inboxes = {"one": LocalInbox(), "two": LocalInbox()}
    router = Router({"a": "one", "b": "two"}, inboxes)
    loop_one = EventLoop("one", inboxes["one"], router)
    a = Recorder("a", router)
    loop_one.add_component(a)
    a.send("b", "on_value", 7)
    assert not loop_one.local_messages
    assert inboxes["two"].get_many() == [("b", "on_value", (7,))]


def test_timers_fire_and_loop_stops_when_all_components_stopped():
    router = Router({"a": "main", "b": "main"}, {"main": LocalInbox()})
    loop = EventLoop("main", router.inboxes["main"], router, idle_timeout=0.001)
    a, b = Recorder("a", router), Recorder("b", router)
    loop.add_component(a)
    loop.add_component(b)
    ticks = []

    def tick():
        ticks.append(1)
        if len(ticks) == 3:
            loop.component_stopped("a")
            loop.component_stopped("b")

    loop.add_timer(0.001, tick, first_delay=0.0)
    loop.run()
    assert len(ticks) == 3 and not loop.running


def test_local_inbox_is_empty_then_returns_everything():
    inbox = LocalInbox()
    with pytest.raises(queue.Empty):
        inbox.get_many(block=False)
    inbox.put(1)
    inbox.put(2)
    assert inbox.get_many() == [1, 2]


def test_call_later_fires_once():
    router = Router({"a": "main"}, {"main": LocalInbox()})
    loop = EventLoop("main", router.inboxes["main"], router, idle_timeout=0.001)
    loop.add_component(Recorder("a", router))
    fired = []
    loop.call_later(0.0, lambda: fired.append(1))
    loop.running = True
    for _ in range(5):
        loop.run_once()
    assert fired == [1]


# ---------------------------------------------------------------- no silent drops: back-pressure on a full inbox
TINY_INBOX_BYTES = 200  # room for a couple of small messages only


def _full_tiny_inbox():
    """A real (faster-fifo) inbox, used in-process, filled until it refuses one more message."""
    inbox = make_mp_inbox(max_bytes=TINY_INBOX_BYTES)
    filler = 0
    while True:
        try:
            inbox.put(("b", "on_value", (filler,)), block=False)
        except queue.Full:
            return inbox, filler
        filler += 1


def _two_loop_router(inbox_two) -> Router:
    router = Router({"a": "one", "b": "two"}, {"one": LocalInbox(), "two": inbox_two})
    router.retry_period = 0.02
    return router


def _drain_later(inbox, delay: float, drained: list) -> threading.Thread:
    def drain() -> None:
        time.sleep(delay)
        drained.extend(inbox.get_many(block=False))

    thread = threading.Thread(target=drain)
    thread.start()
    return thread


def test_a_full_inbox_blocks_the_sender_until_there_is_room_and_nothing_is_dropped():
    inbox, queued = _full_tiny_inbox()
    router = _two_loop_router(inbox)
    drained: list = []
    thread = _drain_later(inbox, 0.3, drained)
    started = time.monotonic()
    router.send("b", "on_value", "last")  # would have been dropped after a timeout before: now it waits
    waited = time.monotonic() - started
    thread.join()
    assert waited >= 0.25
    delivered = drained + inbox.get_many(block=False)
    assert [args[0] for _, _, args in delivered] == [*range(queued), "last"]  # all of them, in order


def test_a_sender_waiting_on_a_full_inbox_warns_periodically_naming_the_destination(monkeypatch):
    inbox, _ = _full_tiny_inbox()
    router = _two_loop_router(inbox)
    router.warning_period = 0.05
    warnings: list[str] = []
    monkeypatch.setattr(event_loop.log, "warning", lambda fmt, *args: warnings.append(fmt % args))
    thread = _drain_later(inbox, 0.4, [])
    router.send("b", "on_value", "last")
    thread.join()
    assert len(warnings) >= 2
    assert all("inbox of b (loop two) has been full" in w and "on_value" in w for w in warnings)


def test_a_full_inbox_of_an_exited_loop_is_an_error_naming_the_component():
    inbox, _ = _full_tiny_inbox()
    router = _two_loop_router(inbox)

    def exit_later() -> None:
        time.sleep(0.2)
        router.liveness.mark_exited("two")  # e.g. the runner saw the process of loop "two" die

    thread = threading.Thread(target=exit_later)
    thread.start()
    with pytest.raises(UndeliverableMessage, match="'b'.*full.*exited") as error:
        router.send("b", "on_value", "last")
    thread.join()
    assert (error.value.component, error.value.slot, error.value.loop_name) == ("b", "on_value", "two")


class _Runner(Component):
    def __init__(self, router: Router) -> None:
        super().__init__("runner", router)
        self.errors: list[tuple[str, str]] = []

    def on_component_error(self, name: str, tb: str) -> None:
        self.errors.append((name, tb))


def test_an_undeliverable_message_becomes_an_error_of_that_component_for_the_runner():
    inbox, _ = _full_tiny_inbox()
    router = Router({"a": "one", "runner": "one", "b": "two"}, {"one": LocalInbox(), "two": inbox})
    router.retry_period = 0.01
    router.liveness.mark_exited("two")
    loop = EventLoop("one", router.inboxes["one"], router)
    a, runner = Recorder("a", router), _Runner(router)
    loop.add_component(a)
    loop.add_component(runner)

    def forward(value: int) -> None:
        a.received.append(value)
        a.send("b", "on_value", value)

    a.on_forward = forward
    router.inboxes["one"].put(("a", "on_forward", (1,)))
    router.inboxes["one"].put(("a", "on_value", (5,)))
    loop.running = True
    loop.run_once()
    assert a.received == [1, 5]  # the failure of one handler does not lose the messages after it
    assert len(runner.errors) == 1 and runner.errors[0][0] == "b"
    assert "inbox of loop 'two'" in runner.errors[0][1] and loop.running


def test_a_loop_that_ends_is_marked_exited_for_the_senders():
    router = Router({"a": "main"}, {"main": LocalInbox()})
    loop = EventLoop("main", router.inboxes["main"], router, idle_timeout=0.001)
    loop.add_component(Recorder("a", router))
    loop.call_later(0.0, lambda: loop.component_stopped("a"))
    assert not router.liveness.exited("main")
    loop.run()
    assert router.liveness.exited("main")


def test_liveness_shared_for_child_processes_lives_in_shared_memory():
    liveness = LoopLiveness(["one", "two"], share=True)
    assert liveness.flags.is_shared()
    liveness.mark_exited("two")
    assert (liveness.exited("one"), liveness.exited("two"), liveness.exited("unknown")) == (False, True, False)


def test_post_from_another_thread_wakes_a_loop_waiting_for_messages():
    inbox = make_mp_inbox()
    router = Router({"a": "main"}, {"main": inbox})
    loop = EventLoop("main", inbox, router, idle_timeout=30.0)  # only a message can end the wait early
    a = Recorder("a", router)
    loop.add_component(a)
    loop.running = True
    thread = threading.Thread(target=lambda: (time.sleep(0.1), loop.post("a", "on_value", 3)))
    thread.start()
    started = time.monotonic()
    loop.run_once()
    thread.join()
    assert a.received == [3] and time.monotonic() - started < 2.0
    inbox.close()
