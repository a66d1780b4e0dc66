"""convert_space turns legacy gym spaces (mimicked here: gym is not installed) into Gymnasium spaces."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from sample_factory.envs.gymnasium_utils import convert_space


# minimal stand-ins with the class names and attributes of the old gym.spaces classes
class Space:
    pass


class Box(Space):
    def __init__(self, low, high, shape, dtype):
        self.low, self.high = np.full(shape, low, dtype=dtype), np.full(shape, high, dtype=dtype)
        self.shape, self.dtype = shape, np.dtype(dtype)


class Discrete(Space):
    def __init__(self, n):
        self.n = n  # gym before 0.23 had no ``start``


class MultiDiscrete(Space):
    def __init__(self, nvec):
        self.nvec, self.dtype = np.asarray(nvec), np.dtype(np.int64)


class MultiBinary(Space):
    def __init__(self, n):
        self.n = n


class Tuple(Space):
    def __init__(self, spaces_):
        self.spaces = tuple(spaces_)


class Dict(Space):
    def __init__(self, spaces_):
        self.spaces = dict(spaces_)


class DiscreteWithStart(Discrete):
    def __init__(self, n, start):
        super().__init__(n)
        self.start = start


def test_box_keeps_bounds_shape_dtype():
    converted = convert_space(Box(0, 255, (3, 4, 4), np.uint8))
    assert isinstance(converted, spaces.Box)
    assert converted.shape == (3, 4, 4) and converted.dtype == np.uint8
    assert converted.low.min() == 0 and converted.high.max() == 255


def test_discrete_multidiscrete_multibinary():
    assert convert_space(Discrete(5)) == spaces.Discrete(5)
    assert convert_space(DiscreteWithStart(3, start=-1)) == spaces.Discrete(3, start=-1)  # subclass -> base rule
    assert convert_space(MultiDiscrete([2, 7])) == spaces.MultiDiscrete([2, 7])
    assert convert_space(MultiBinary(6)) == spaces.MultiBinary(6)


def test_nested_tuple_and_dict_are_converted_recursively():
    legacy = Dict({"obs": Box(-1.0, 1.0, (2,), np.float32), "act": Tuple([Discrete(2), MultiBinary(3)])})
    converted = convert_space(legacy)
    expected = spaces.Dict(
        {
            "obs": spaces.Box(-1.0, 1.0, (2,), np.float32),
            "act": spaces.Tuple([spaces.Discrete(2), spaces.MultiBinary(3)]),
        }
    )
    assert converted == expected


def test_gymnasium_space_returned_as_is():
    space = spaces.Discrete(3)
    assert convert_space(space) is space


def test_unknown_space_names_supported_kinds():
    class Graph(Space):
        pass

    with pytest.raises(TypeError, match="Box, Discrete, MultiDiscrete, MultiBinary, Tuple, Dict"):
        convert_space(Graph())
