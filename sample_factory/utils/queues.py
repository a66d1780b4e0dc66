"""Queue calls that do not fail on a slow peer: a ``get`` that keeps waiting, ``put``s that retry a full queue.

They take any queue with the standard ``get(timeout=)`` / ``put(item, timeout=)`` calls that raise
:class:`queue.Empty` / :class:`queue.Full`: :class:`queue.Queue`, ``multiprocessing`` queues and ``faster_fifo``
queues (whose ``put_many`` sends a list of messages in one call).
"""

from __future__ import annotations

from collections.abc import Sequence
from queue import Empty, Full
from typing import Any

from sample_factory.utils.logging_setup import log

__all__ = ["safe_get", "safe_put", "safe_put_many"]

PUT_TIMEOUT_S = 1.0


def safe_get(q: Any, timeout: float = 1e6, msg: str = "Queue timeout") -> Any:
    """The next item of ``q``, however long it takes: every ``timeout`` seconds without an item logs ``msg``
    (a warning that shows which peer is stalling) and the wait goes on."""
    while True:
        try:
            return q.get(timeout=timeout)
        except Empty:
            log.warning("%s (nothing received for %.1f s, still waiting)", msg, timeout)


def _put_with_retries(put: Any, items: Any, attempts: int, queue_name: str, timeout: float, what: str) -> bool:
    if attempts < 1:
        raise ValueError(f"attempts={attempts}: a put needs at least one attempt")
    for attempt in range(1, attempts + 1):
        try:
            put(items, timeout=timeout)
            return True
        except Full:
            log.warning("Queue %s is full (attempt %d of %d to put %s)", queue_name or "?", attempt, attempts, what)
    log.error(
        "Gave up putting %s into queue %s after %d attempts: its reader is not keeping up",
        what,
        queue_name or "?",
        attempts,
    )
    return False


def safe_put(q: Any, msg: Any, attempts: int = 3, queue_name: str = "", timeout: float = PUT_TIMEOUT_S) -> bool:
    """Put ``msg`` into ``q``, waiting up to ``timeout`` seconds per attempt while the queue is full.

    Returns True once the message is in; after ``attempts`` failed attempts logs an error naming ``queue_name`` and
    returns False (the message is dropped), so a stalled reader cannot hang the writer forever.
    """
    return _put_with_retries(q.put, msg, attempts, queue_name, timeout, "a message")


def safe_put_many(
    q: Any, msgs: Sequence[Any], attempts: int = 3, queue_name: str = "", timeout: float = PUT_TIMEOUT_S
) -> bool:
    """:func:`safe_put` for a list of messages: one ``put_many`` call where the queue has it (all or none of the
    messages go in), else the messages one after the other. True when every message is in."""
    msgs = list(msgs)
    if not msgs:
        return True
    put_many = getattr(q, "put_many", None)
    if put_many is not None:
        return _put_with_retries(put_many, msgs, attempts, queue_name, timeout, f"{len(msgs)} messages")
    return all(safe_put(q, m, attempts, queue_name, timeout) for m in msgs)
