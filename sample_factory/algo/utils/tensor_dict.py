"""Sample Factory 2's module path; ``TensorDict`` lives in :mod:`sample_factory.utils.tensor_dict`.

Added here: the copying and conversion helpers Sample Factory 2 keeps next to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sample_factory.algo.utils.tensor_utils import clone_tensor, ensure_numpy_array
from sample_factory.utils.logging_setup import log
from sample_factory.utils.tensor_dict import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    TensorDict,
    cat_tensordicts,
    copy_slots,
)


def to_numpy(t: Any) -> np.ndarray:
    """One leaf as a numpy array (a CPU tensor shares its memory; see ``tensor_utils.ensure_numpy_array``)."""
    return ensure_numpy_array(t)


def _map_leaves(d: dict, fn: Any) -> TensorDict:
    return TensorDict({key: _map_leaves(v, fn) if isinstance(v, dict) else fn(v) for key, v in d.items()})


def tensor_dict_to_numpy(d: dict) -> TensorDict:
    """The same nesting with every leaf as a numpy array (views of CPU tensors, no copy)."""
    return _map_leaves(d, to_numpy)


def clone_tensordict(d: dict) -> TensorDict:
    """A deep copy: the same nesting, every tensor or array cloned (other leaves are shared)."""
    return _map_leaves(d, lambda v: clone_tensor(v) if isinstance(v, (Tensor, np.ndarray)) else v)


def shallow_recursive_copy(d: dict) -> dict:
    """New dicts at every level of nesting, the same leaf objects: reassigning a key of the copy leaves ``d`` as
    it was, writing into a leaf changes both."""
    return type(d)({key: shallow_recursive_copy(v) if isinstance(v, dict) else v for key, v in d.items()})


def _invalid_count(value: Any) -> int:
    if isinstance(value, Tensor):
        return 0 if not value.is_floating_point() else int((~torch.isfinite(value)).sum())
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return int((~np.isfinite(value)).sum())
    return 0


def _leaves(d: dict, prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in d.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def find_invalid_data(t: dict, msg: str | None = None, keys: Iterable[str] | None = None) -> bool:
    """Whether any floating-point leaf of ``t`` holds NaN or inf; each such leaf is logged as a warning.

    ``keys`` limits the search to these top-level keys (or dotted paths of nested leaves, e.g. ``"obs.obs"``);
    ``msg`` prefixes the warnings, to say where the check was made.
    """
    wanted = None if keys is None else set(keys)
    found = False
    for path, value in _leaves(t):
        if wanted is not None and path not in wanted and path.split(".")[0] not in wanted:
            continue
        count = _invalid_count(value)
        if count:
            found = True
            log.warning("%s%d NaN/inf value(s) in %s", f"{msg}: " if msg else "", count, path)
    return found
