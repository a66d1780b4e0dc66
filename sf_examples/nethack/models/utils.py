"""Small helpers of the NetHack models."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain, zip_longest
from typing import Any

_MISSING = object()


def interleave(*args: Iterable[Any]) -> list[Any]:
    """Merge sequences by taking one item of each in turn: ``interleave([conv1, conv2], [act1, act2])`` is
    ``[conv1, act1, conv2, act2]``, the usual way to lay out layers and their activations. A longer sequence
    goes on alone once the shorter ones run out."""
    return [item for item in chain.from_iterable(zip_longest(*args, fillvalue=_MISSING)) if item is not _MISSING]
