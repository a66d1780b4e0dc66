"""Helpers that treat torch tensors and numpy arrays alike (Sample Factory 2's ``tensor_utils`` names).

Code that handles trajectories sees both: shared buffers are tensors, their cheap per-step views numpy arrays.
Each function here does the one obvious thing for either kind, so callers need no ``isinstance`` of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "cat_tensors",
    "clone_tensor",
    "dict_of_lists_cat",
    "ensure_numpy_array",
    "ensure_torch_tensor",
    "unsqueeze_tensor",
]

ArrayLike = Tensor | np.ndarray


def cat_tensors(lt: Sequence[ArrayLike]) -> ArrayLike:
    """Concatenate ``lt`` along the first dimension: ``torch.cat`` for tensors, ``np.concatenate`` for arrays.

    The kind of the first element decides; a mix of kinds is converted to it.
    """
    if len(lt) == 0:
        raise ValueError("cat_tensors needs at least one tensor or array to concatenate, got an empty sequence")
    if isinstance(lt[0], Tensor):
        return torch.cat([ensure_torch_tensor(t) for t in lt])
    return np.concatenate([ensure_numpy_array(t) for t in lt])


def dict_of_lists_cat(d: Mapping[Any, Sequence[ArrayLike]]) -> dict[Any, ArrayLike]:
    """``{key: cat_tensors(parts)}``: each key's list of tensors (or arrays) concatenated into one."""
    return {key: cat_tensors(parts) for key, parts in d.items()}


def clone_tensor(t: ArrayLike) -> ArrayLike:
    """A copy that owns its memory: ``Tensor.clone()`` or ``ndarray.copy()``."""
    if isinstance(t, Tensor):
        return t.clone()
    return np.array(t, copy=True)


def ensure_numpy_array(t: Any) -> np.ndarray:
    """``t`` as a numpy array: a CPU tensor shares its memory, a GPU tensor is copied to the host, an array is
    returned as is, anything else goes through ``np.asarray``."""
    if isinstance(t, Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t)


def ensure_torch_tensor(t: Any) -> Tensor:
    """``t`` as a tensor: a tensor as is, a numpy array sharing its memory, anything else via ``torch.as_tensor``."""
    if isinstance(t, Tensor):
        return t
    if isinstance(t, np.ndarray):
        return torch.from_numpy(t)
    return torch.as_tensor(t)


def unsqueeze_tensor(t: ArrayLike, dim: int) -> ArrayLike:
    """``t`` with a new dimension of size one at ``dim`` (a view for both kinds)."""
    if isinstance(t, Tensor):
        return t.unsqueeze(dim)
    return np.expand_dims(t, dim)
