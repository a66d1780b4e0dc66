"""Queue calls that survive a slow peer: ``safe_get`` keeps waiting, ``safe_put``/``safe_put_many`` retry."""

from __future__ import annotations

import io
import queue
from collections.abc import Iterator

import pytest
from faster_fifo import Queue as FastQueue

from sample_factory.utils.logging_setup import log, make_console_handler
from sample_factory.utils.utils import safe_get, safe_put, safe_put_many


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = make_console_handler(stream)
    log.addHandler(handler)
    yield stream
    log.removeHandler(handler)


class SlowQueue(queue.Queue):
    """Empty for the first ``misses`` gets, as a queue whose writer is late."""

    def __init__(self, misses: int) -> None:
        super().__init__()
        self.misses = misses

    def get(self, block: bool = True, timeout: float | None = None):
        if self.misses:
            self.misses -= 1
            raise queue.Empty
        return super().get(block, timeout)


def test_safe_get_waits_through_timeouts(logged: io.StringIO) -> None:
    q = SlowQueue(misses=2)
    q.put("late")
    assert safe_get(q, timeout=0.01, msg="policy worker 3 silent") == "late"
    assert logged.getvalue().count("policy worker 3 silent") == 2


def test_safe_put_retries_then_gives_up(logged: io.StringIO) -> None:
    q: queue.Queue = queue.Queue(maxsize=1)
    assert safe_put(q, "a", attempts=2, queue_name="q1", timeout=0.01) is True
    assert safe_put(q, "b", attempts=2, queue_name="q1", timeout=0.01) is False
    assert q.get_nowait() == "a" and q.empty()
    text = logged.getvalue()
    assert text.count("Queue q1 is full") == 2 and "Gave up" in text
    with pytest.raises(ValueError, match="at least one attempt"):
        safe_put(q, "c", attempts=0)


def test_safe_put_many_without_put_many() -> None:
    q: queue.Queue = queue.Queue()
    assert safe_put_many(q, [1, 2, 3], queue_name="plain") is True
    assert [q.get_nowait() for _ in range(3)] == [1, 2, 3]
    assert safe_put_many(q, []) is True and q.empty()


def test_safe_put_many_all_or_nothing_on_a_faster_fifo_queue() -> None:
    q = FastQueue(max_size_bytes=1000)
    try:
        assert safe_put_many(q, ["x", "y"], attempts=1) is True
        assert q.get_many(timeout=1) == ["x", "y"]
        too_big = ["z" * 400] * 5
        assert safe_put_many(q, too_big, attempts=2, timeout=0.01) is False
        with pytest.raises(queue.Empty):
            q.get(timeout=0.01)
    finally:
        q.close()
