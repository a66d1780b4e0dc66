"""faster-fifo's and glibc's private memory layout: freeing a faster-fifo queue whose lock was left held by a
process that died inside ``put`` or ``get``.

What faster-fifo 1.5 does (measured: ``tests/messaging/test_queue_repair.py``): each queue guards its ring buffer
with a process-shared pthread mutex that is *not* robust. A process SIGKILLed while holding it (inside a put or a
get, often: a process preempted mid-put on a loaded machine holds it for a whole time slice) leaves it locked for
ever, and the timeouts of ``put``/``get`` bound only the wait for room or messages, not the wait for the lock: every
process that touches the queue afterwards blocks for good, the runner included.

A mutex that is locked by a thread id that no longer exists belongs to nobody that can ever release it: with the dead
holder's lock still shutting everyone else out, :func:`release_if_dead_holder` undoes a half-written message (a put
writes the length, then the body, then counts the message: a kill in between leaves bytes no reader can frame) and
unlocks the mutex on the dead holder's behalf with glibc's ``pthread_mutex_unlock``. A ring that is inconsistent in
a way a half-written message cannot explain (a reader killed half-way through taking messages out) is emptied, and
the repair says so.

The layout it relies on is faster-fifo's and glibc's, checked per queue before any repair (:func:`layout_supported`):
the header (``queue_obj_buffer``) begins with six 64-bit words (capacity, max messages, head, tail, bytes used,
message count), the glibc ``pthread_mutex_t`` is at byte 56, and each message in the ring (``shared_memory``, as
many bytes as the capacity) is a 64-bit length followed by the pickled message, wrapping around the end. Verified on
faster-fifo ``VERIFIED_FASTER_FIFO`` with glibc on Linux x86-64 and aarch64; on another faster-fifo, or with
``SF_DISABLE_FAST_PATHS=all``, no repair is tried (:func:`repair_unavailable` says why, the caller logs it once).
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sample_factory.compat import disabled, distribution_version, log

VERIFIED_FASTER_FIFO = ("1.4.5", "1.4.6", "1.4.7", "1.5.0", "1.5.1", "1.5.2")

HEADER = struct.Struct("<6Q")  # capacity, max messages, head, tail, bytes used, message count
RING_STATE_OFFSET = 16  # head, tail, bytes used, message count
MUTEX_OFFSET = 56
MUTEX_WORDS = struct.Struct("<iIi")  # glibc pthread_mutex_t: __lock, __count, __owner (thread id of the holder)
MUTEX_KIND_OFFSET = MUTEX_OFFSET + 16  # __kind: the mutex type, plus 128 when process-shared
PTHREAD_MUTEX_PSHARED_BIT = 128
LENGTH = struct.Struct("<Q")  # the length before each message in the ring

_libc: Any = None


def _pthread_mutex_unlock(address: int) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None)
    return _libc.pthread_mutex_unlock(ctypes.c_void_p(address))


@dataclass
class QueueRepair:
    """One queue freed from a dead holder's lock."""

    label: str  # which queue, e.g. "inbox of rollout_w0"
    dead_thread: int  # the thread id that held the lock
    rolled_back_bytes: int = 0  # a half-written message undone
    emptied_messages: int = 0  # > 0 (or ``emptied``): the ring made no sense and was emptied, its messages lost
    emptied: bool = False

    def describe(self) -> str:
        what = f"the {self.label} was left locked by thread {self.dead_thread} of a process that died in a queue "
        what += "operation (killed inside put or get); unlocked it"
        if self.rolled_back_bytes:
            what += f", undoing a half-written message ({self.rolled_back_bytes} bytes)"
        if self.emptied:
            what += f"; its contents made no sense and were dropped ({self.emptied_messages} messages)"
        return what


def repair_unavailable() -> str | None:
    """Why no queue of this process can be repaired (switched off, unverified faster-fifo, not Linux), or None."""
    switch = disabled("faster_fifo_internals")
    if switch:
        return switch
    if not sys.platform.startswith("linux"):
        return f"the repair reads glibc's mutex on Linux, not on {sys.platform}"
    version = distribution_version("faster-fifo")
    if version not in VERIFIED_FASTER_FIFO:
        return f"faster-fifo {version} is not a version the repair was verified on ({', '.join(VERIFIED_FASTER_FIFO)})"
    return None


def layout_supported(q: Any) -> bool:
    """The queue's memory looks as this module expects (see the module docstring); no repair is tried otherwise."""
    if repair_unavailable() is not None:
        return False
    try:
        header, ring = q.queue_obj_buffer, q.shared_memory
        capacity = HEADER.unpack_from(header, 0)[0]
        (kind,) = struct.unpack_from("<i", header, MUTEX_KIND_OFFSET)
    except (AttributeError, TypeError, struct.error):
        return False
    return capacity == len(ring) == q.max_size_bytes and kind & PTHREAD_MUTEX_PSHARED_BIT != 0


def lock_holder(q: Any) -> int | None:
    """The thread id holding the queue's lock (0 if locked by a thread that has not written its id yet), or None."""
    lock, _, owner = MUTEX_WORDS.unpack_from(q.queue_obj_buffer, MUTEX_OFFSET)
    return None if lock == 0 else owner


def thread_alive(tid: int) -> bool:
    """A thread with this id runs (a zombie, dead but not yet reaped, does not). Linux ``/proc``."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X", b"x")


def _read_ring(ring: memoryview, pos: int, n: int) -> bytes:
    end = pos + n
    if end <= len(ring):
        return bytes(ring[pos:end])
    return bytes(ring[pos:]) + bytes(ring[: end - len(ring)])


def _committed_bytes(ring: memoryview, head: int, used: int, count: int) -> int | None:
    """Bytes taken by the ``count`` whole messages from ``head`` on; None if they do not fit in ``used`` bytes."""
    pos, total, capacity = head, 0, len(ring)
    for _ in range(count):
        if total + LENGTH.size > used:
            return None
        (n,) = LENGTH.unpack(_read_ring(ring, pos, LENGTH.size))
        if n > used - total - LENGTH.size:
            return None
        total += LENGTH.size + n
        pos = (pos + LENGTH.size + n) % capacity
    return total


def _mend_ring(q: Any, repair: QueueRepair) -> None:
    """Make the ring consistent again; only while the dead holder's lock keeps everyone else out."""
    header = q.queue_obj_buffer
    capacity, _, head, tail, used, count = HEADER.unpack_from(header, 0)
    ring = memoryview(q.shared_memory).cast("B")
    committed = None
    if head < capacity and tail < capacity and used <= capacity and (head + used) % capacity == tail:
        committed = _committed_bytes(ring, head, used, count)
    if committed is None:
        repair.emptied, repair.emptied_messages = True, count
        struct.pack_into("<4Q", header, RING_STATE_OFFSET, 0, 0, 0, 0)
    elif committed < used:
        repair.rolled_back_bytes = used - committed
        struct.pack_into("<4Q", header, RING_STATE_OFFSET, head, (head + committed) % capacity, committed, count)


def release_if_dead_holder(
    q: Any, label: str, before_unlock: Callable[[QueueRepair], None] | None = None
) -> QueueRepair | None:
    """Unlock ``q`` if its lock is held by a thread that no longer exists, mending the ring first; else None.

    ``before_unlock`` gets the repair once the ring is mended, while the lock still holds every other user of the
    queue back: a process whose loop waits on this lock may reach its end as soon as it is free.
    """
    holder = lock_holder(q)
    if not holder or thread_alive(holder):
        return None
    if lock_holder(q) != holder:  # released meanwhile: the id was stale, not a dead holder's
        return None
    repair = QueueRepair(label, holder)
    _mend_ring(q, repair)
    if before_unlock is not None:
        before_unlock(repair)
    rc = _pthread_mutex_unlock(ctypes.addressof(q.queue_obj_buffer) + MUTEX_OFFSET)
    if rc != 0:
        log.error("Could not unlock the %s (pthread_mutex_unlock returned %d)", label, rc)
        return None
    return repair
