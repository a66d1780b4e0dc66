"""The event loop delivers messages locally and across loops, batches them, runs timers and stops cleanly."""

from __future__ import annotations

import queue

import pytest

from sample_factory.algo.utils.event_loop import Component, EventLoop, LocalInbox, Router


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
