"""Small array helpers: extremes with their position, stacking lists of arrays, rescaling, contiguous memory."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "op_with_idx",
    "max_with_idx",
    "min_with_idx",
    "numpy_all_the_way",
    "numpy_flatten",
    "scale_to_range",
    "ensure_contigious",
]

T = TypeVar("T")


def op_with_idx(x: Sequence[T], op: Callable[[T, T], bool]) -> tuple[T, int]:
    """``(best, index)`` of the element of ``x`` that wins every comparison ``op(candidate, best)``.

    ``op`` says when a candidate beats the best so far (``operator.gt`` finds the maximum); on ties the first
    element wins, as ``op`` is strict.
    """
    if len(x) == 0:
        raise ValueError("op_with_idx needs at least one element: x is empty")
    best_idx = 0
    best = x[0]
    for i in range(1, len(x)):
        if op(x[i], best):
            best, best_idx = x[i], i
    return best, best_idx


def max_with_idx(x: Sequence[T]) -> tuple[T, int]:
    """``(max(x), index of its first occurrence)``."""
    return op_with_idx(x, operator.gt)


def min_with_idx(x: Sequence[T]) -> tuple[T, int]:
    """``(min(x), index of its first occurrence)``."""
    return op_with_idx(x, operator.lt)


def _check_same_shapes(list_of_arrays: Sequence[np.ndarray], what: str, skip_first_dim: bool) -> None:
    if len(list_of_arrays) == 0:
        raise ValueError(f"{what} needs at least one array: the list is empty")
    shapes = {np.shape(a)[1:] if skip_first_dim else np.shape(a) for a in list_of_arrays}
    if len(shapes) > 1:
        raise ValueError(f"{what}: arrays of different shapes {sorted(shapes)} cannot be combined: pad them first")


def numpy_all_the_way(list_of_arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Stack ``n`` arrays of one shape ``S`` into one array of shape ``[n, *S]`` (a list of frames into a batch)."""
    _check_same_shapes(list_of_arrays, "numpy_all_the_way", skip_first_dim=False)
    return np.stack([np.asarray(a) for a in list_of_arrays])


def numpy_flatten(list_of_arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Join arrays ``[n_i, *S]`` end to end along their first dimension into one ``[sum(n_i), *S]`` array.

    A list of per-env batches becomes one batch; a list of 1-D arrays becomes one flat array.
    """
    _check_same_shapes(list_of_arrays, "numpy_flatten", skip_first_dim=True)
    return np.concatenate([np.asarray(a) for a in list_of_arrays], axis=0)


def scale_to_range(np_array: np.ndarray, min_: float, max_: float) -> np.ndarray:
    """Rescale ``np_array`` linearly so that its smallest value becomes ``min_`` and its largest ``max_`` (float).

    An array whose values are all equal has no spread to stretch: every value becomes ``min_``.
    """
    values = np.asarray(np_array, dtype=np.float64)
    if values.size == 0:
        return values
    low, high = values.min(), values.max()
    if high == low:
        return np.full_like(values, float(min_))
    return (values - low) / (high - low) * (max_ - min_) + min_


def ensure_contigious(x: Any) -> Any:
    """``x`` itself if its memory is one C-ordered block, else a contiguous copy (numpy arrays and torch tensors).

    Shared-memory buffers, ``torch.from_numpy`` and many C extensions (encoders, env bindings) need contiguous input;
    a transposed or sliced view is not.
    """
    if isinstance(x, np.ndarray):
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)
    contiguous = getattr(x, "contiguous", None)
    if callable(contiguous):
        return contiguous()
    raise TypeError(f"ensure_contigious takes a numpy array or a torch tensor, got {type(x).__name__}")
