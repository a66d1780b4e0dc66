"""Function decorators of Sample Factory 2's public API."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sample_factory.utils.logging_setup import log

FuncT = TypeVar("FuncT", bound=Callable[..., Any])


def static_vars(**kwargs: Any) -> Callable[[FuncT], FuncT]:
    """Decorator that sets each keyword as an attribute of the function: state kept across calls, like C statics.

    ``@static_vars(counter=0)`` then ``f.counter += 1`` inside ``f``. The attributes are set once, at decoration.
    """

    def decorate(func: FuncT) -> FuncT:
        for name, value in kwargs.items():
            setattr(func, name, value)
        return func

    return decorate


def retrying(
    exceptions: type[BaseException] | tuple[type[BaseException], ...],
    attempts: int,
    sleep_s: float = 0.0,
    between: Callable[[tuple], None] | None = None,
) -> Callable[[FuncT], FuncT]:
    """Decorator that calls the function up to ``attempts`` times while it raises one of ``exceptions``.

    The shared core of the public ``retry`` decorators (here, ``envs.env_utils`` and the VizDoom multiplayer
    wrapper, each with Sample Factory 2's parameters). Each failure but the last is logged, then ``sleep_s`` seconds
    pass and ``between(args)`` runs (e.g. a reset of the object whose method failed); the last failure is raised to
    the caller. Other exceptions pass at once.
    """
    if attempts < 1:
        raise ValueError(f"retry: {attempts} attempts must be at least 1 (1 calls the function once)")

    def decorate(func: FuncT) -> FuncT:
        @functools.wraps(func)
        def with_retries(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(1, attempts + 1):
                try:
                    return func(*args, **kwargs)
                except exceptions as exc:
                    if attempt == attempts:
                        raise
                    log.warning("%s failed (attempt %d of %d): %r; retrying", func.__qualname__, attempt, attempts, exc)
                    if sleep_s > 0:
                        time.sleep(sleep_s)
                    if between is not None:
                        between(args)
            raise AssertionError("unreachable: the last attempt returns or raises")

        return with_retries  # type: ignore[return-value]

    return decorate


def retry(times: int, exceptions: type[BaseException] | tuple[type[BaseException], ...]) -> Callable[[FuncT], FuncT]:
    """Decorator that calls the function up to ``times`` times while it raises one of ``exceptions``.

    For operations that fail now and then for reasons outside the program (a file system or a network service that
    is briefly unavailable). Each failure is logged; the last one is raised to the caller. Other exceptions pass at
    once.
    """
    if times < 1:
        raise ValueError(f"retry(times={times}): times must be at least 1 (1 calls the function once)")
    return retrying(exceptions, times)
