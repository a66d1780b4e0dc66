"""Sample Factory 2's module path for the multiprocessing utilities; they live in
:mod:`sample_factory.messaging.multiprocessing_utils`."""

from __future__ import annotations

from multiprocessing.context import BaseContext
from typing import Any

from sample_factory.messaging.multiprocessing_utils import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    NoLock,
    get_mp_ctx,
    get_mp_lock,
)

# Sample Factory 2's name for the lock that never blocks (serial mode)
FakeLock = NoLock


def get_lock(serial: bool = False, mp_ctx: BaseContext | None = None) -> Any:
    """A :class:`FakeLock` in serial mode; otherwise a lock of ``mp_ctx`` (the ``spawn`` context when None), shareable
    with the processes that context starts."""
    if serial:
        return NoLock()
    return get_mp_lock(mp_ctx if mp_ctx is not None else get_mp_ctx(serial=False))
