"""Function decorators of Sample Factory 2's public API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

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
