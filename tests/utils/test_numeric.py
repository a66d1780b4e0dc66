"""Array helpers of ``sample_factory.utils.utils``: extremes with their index, stacking, rescaling, contiguity."""

from __future__ import annotations

import operator

import numpy as np
import pytest
import torch

from sample_factory.utils.utils import (
    ensure_contigious,
    max_with_idx,
    min_with_idx,
    numpy_all_the_way,
    numpy_flatten,
    op_with_idx,
    scale_to_range,
)


def test_extremes_with_their_first_index() -> None:
    values = [3, 7, 1, 7, 1]
    assert max_with_idx(values) == (7, 1)
    assert min_with_idx(values) == (1, 2)
    assert op_with_idx(values, operator.ge) == (7, 3)  # a non-strict op lets the last tie win
    assert op_with_idx(["bb", "a", "ccc"], lambda a, b: len(a) > len(b)) == ("ccc", 2)
    with pytest.raises(ValueError, match="empty"):
        max_with_idx([])


def test_numpy_all_the_way_stacks_a_new_leading_dimension() -> None:
    frames = [np.full((2, 3), i) for i in range(4)]
    stacked = numpy_all_the_way(frames)
    assert stacked.shape == (4, 2, 3) and stacked[3, 1, 2] == 3
    with pytest.raises(ValueError, match="different shapes"):
        numpy_all_the_way([np.zeros(2), np.zeros(3)])


def test_numpy_flatten_joins_along_the_first_dimension() -> None:
    joined = numpy_flatten([np.zeros((2, 3)), np.ones((1, 3))])
    assert joined.shape == (3, 3) and joined[2].tolist() == [1, 1, 1]
    assert numpy_flatten([np.array([1, 2]), np.array([3])]).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="different shapes"):
        numpy_flatten([np.zeros((2, 3)), np.zeros((2, 4))])


def test_scale_to_range() -> None:
    scaled = scale_to_range(np.array([2.0, 4.0, 6.0]), -1, 1)
    assert scaled.tolist() == [-1.0, 0.0, 1.0]
    assert scale_to_range(np.array([5, 5]), 0, 255).tolist() == [0.0, 0.0]


def test_ensure_contigious() -> None:
    a = np.arange(12).reshape(3, 4)
    assert ensure_contigious(a) is a
    t = ensure_contigious(a.T)
    assert t.flags.c_contiguous and (t == a.T).all()
    scalar = np.array(3.0)
    assert ensure_contigious(scalar).shape == ()
    x = torch.arange(6).reshape(2, 3).t()
    assert not x.is_contiguous()
    y = ensure_contigious(x)
    assert y.is_contiguous() and torch.equal(x, y)
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        ensure_contigious([1, 2])
