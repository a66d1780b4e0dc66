"""Serial mode gets no context and a no-op lock; parallel mode the spawn context and a real lock."""

from __future__ import annotations

from sample_factory.messaging.multiprocessing_utils import NoLock, get_mp_ctx, get_mp_lock


def test_serial_mode_has_no_context():
    assert get_mp_ctx(serial=True) is None


def test_parallel_mode_uses_spawn():
    assert get_mp_ctx(serial=False).get_start_method() == "spawn"


def test_lock_from_context_excludes_a_second_holder():
    lock = get_mp_lock(get_mp_ctx(serial=False))
    assert lock.acquire(block=False)
    assert not lock.acquire(block=False)  # a real lock: held, so a second acquire fails
    lock.release()
    with lock:
        assert not lock.acquire(block=False)
    assert lock.acquire(block=False)
    lock.release()


def test_no_lock_never_blocks():
    lock = get_mp_lock(None)
    assert isinstance(lock, NoLock)
    assert lock.acquire() and lock.acquire(block=False)  # re-entrant and non-blocking
    lock.release()
    with lock as held:
        assert held is lock
