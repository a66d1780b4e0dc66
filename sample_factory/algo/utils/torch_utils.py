"""Sample Factory 2's module path; most code lives in :mod:`sample_factory.utils.torch_utils`.

Added here: ``inference_context``, ``to_torch_dtype``, and ``masked_select`` under Sample Factory 2's parameter
name (``num_non_mask``).
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from torch import Tensor

from sample_factory.utils.torch_utils import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    ValidMean,
    as_channels_last,
    calc_num_elements,
    init_torch_runtime,
    masked_mean,
    seed_torch,
    synchronize,
    to_scalar,
    trains_faster_channels_last,
)
from sample_factory.utils.torch_utils import masked_select as _masked_select


def masked_select(x: Tensor, mask: Tensor, num_non_mask: int | None = None) -> Tensor:
    """The elements of ``x`` where ``mask`` is true; ``x`` itself when ``num_non_mask`` (how many elements the mask
    leaves out) is known to be 0, which saves the copy. See :func:`sample_factory.utils.torch_utils.masked_select`."""
    return _masked_select(x, mask, num_invalids=num_non_mask)


def inference_context(is_serial: bool) -> contextlib.AbstractContextManager:
    """The autograd context for a policy forward pass that only acts: ``torch.inference_mode()``, or
    ``torch.no_grad()`` in serial mode.

    Tensors made under inference mode can never join autograd or be updated in place outside it. In serial mode the
    learner lives in the same process and may be handed what inference produced, so only gradient recording is off.
    """
    return torch.no_grad() if is_serial else torch.inference_mode()


def to_torch_dtype(numpy_dtype: np.dtype | type | str) -> torch.dtype:
    """The torch dtype of arrays of ``numpy_dtype`` (``np.float32`` -> ``torch.float32``, ``np.uint8`` ->
    ``torch.uint8``, ``bool`` -> ``torch.bool``)."""
    dtype = np.dtype(numpy_dtype)
    try:
        return torch.from_numpy(np.zeros(0, dtype=dtype)).dtype
    except TypeError:
        raise TypeError(
            f"numpy dtype {dtype} has no torch equivalent: give the space a numeric or bool dtype "
            "(e.g. np.float32, np.uint8, np.int64)"
        ) from None
