"""Nested-dict helpers of SF2's ``sample_factory.utils.dicts``: walking with key paths, walking two dicts together,
copying the structure, collecting dicts into lists, looking a setting up under several names."""

from __future__ import annotations

import numpy as np
import pytest

from sample_factory.utils.dicts import (
    copy_dict_structure,
    dict_of_lists_append,
    dict_of_lists_append_idx,
    get_first_present,
    iter_dicts_recursively,
    iterate_recursively_with_prefix,
)

NESTED = {"a": 1, "b": {"c": 2, "d": {"e": 3}}}


def test_iterate_recursively_with_prefix_yields_key_paths() -> None:
    leaves = [(key, value, path) for _, key, value, path in iterate_recursively_with_prefix(NESTED)]
    assert leaves == [("a", 1, ["a"]), ("c", 2, ["b", "c"]), ("e", 3, ["b", "d", "e"])]
    with_prefix = [path for *_, path in iterate_recursively_with_prefix({"x": 1}, prefix=["stats"])]
    assert with_prefix == [["stats", "x"]]
    # the parent comes with each leaf so it can be replaced in place
    d = {"o": {"p": 1}}
    for parent, key, value, _ in iterate_recursively_with_prefix(d):
        parent[key] = value * 10
    assert d == {"o": {"p": 10}}


def test_iter_dicts_recursively_walks_two_dicts_in_step() -> None:
    src = {"obs": {"rgb": np.ones(2), "vec": np.full(3, 2.0)}, "rew": np.array(5.0)}
    dst = {"obs": {"rgb": np.zeros(2), "vec": np.zeros(3)}, "rew": np.array(0.0)}
    for _, d2, key, value1, _ in iter_dicts_recursively(src, dst):
        d2[key][...] = value1
    assert dst["obs"]["vec"].tolist() == [2.0, 2.0, 2.0] and float(dst["rew"]) == 5.0
    with pytest.raises(KeyError, match="lacks key 'vec'"):
        list(iter_dicts_recursively(src, {"obs": {"rgb": 0}, "rew": 0}))
    with pytest.raises(TypeError, match="'obs' is a dict"):
        list(iter_dicts_recursively(src, {"obs": 0, "rew": 0}))


def test_copy_dict_structure() -> None:
    copy = copy_dict_structure(NESTED)
    assert copy == {"a": None, "b": {"c": None, "d": {"e": None}}}
    copy["b"]["c"] = 7
    assert NESTED["b"]["c"] == 2


def test_dict_of_lists_append_collects_in_place() -> None:
    collected: dict = {}
    dict_of_lists_append(collected, {"r": 1, "s": {"len": 10}})
    dict_of_lists_append(collected, {"r": 2, "s": {"len": 20}})
    assert collected == {"r": [1, 2], "s": {"len": [10, 20]}}


def test_dict_of_lists_append_idx_takes_one_sample_of_a_batch() -> None:
    batch = {"r": np.array([1, 2, 3]), "s": {"len": [10, 20, 30]}}
    collected: dict = {}
    dict_of_lists_append_idx(collected, batch, 2)
    dict_of_lists_append_idx(collected, batch, 0)
    assert collected == {"r": [3, 1], "s": {"len": [30, 10]}}


def test_get_first_present() -> None:
    d = {"new_name": None, "old_name": 3}
    assert get_first_present(d, ["missing", "old_name"]) == 3
    assert get_first_present(d, ["new_name", "old_name"], default=5) is None
    assert get_first_present(d, ["x", "y"], default=5) == 5
    assert get_first_present(d, []) is None
