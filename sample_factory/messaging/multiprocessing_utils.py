"""Which multiprocessing context and lock a component gets, depending on serial or parallel mode.

Parallel mode always uses the ``spawn`` start method: forking a process that already holds CUDA contexts, simulator
threads or torch thread pools is unsafe. Serial mode runs everything in one process, so no context is needed and
locks become no-ops; code written once against ``get_mp_lock`` works in both modes.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import BaseContext
from typing import Any


class NoLock:
    """A lock that never blocks: what shared objects use in serial mode, where only one process exists.

    Same interface as ``multiprocessing.Lock`` as far as callers use it: a context manager with ``acquire`` and
    ``release``.
    """

    def acquire(self, block: bool = True, timeout: float = -1) -> bool:
        return True

    def release(self) -> None:
        return None

    def __enter__(self) -> NoLock:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def get_mp_ctx(serial: bool) -> BaseContext | None:
    """None in serial mode (nothing to start), else the ``spawn`` multiprocessing context."""
    if serial:
        return None
    return multiprocessing.get_context("spawn")


def get_mp_lock(mp_ctx: BaseContext | None = None) -> Any:
    """A lock shareable with processes of ``mp_ctx``, or a :class:`NoLock` when there is no context (serial mode)."""
    if mp_ctx is None:
        return NoLock()
    return mp_ctx.Lock()
