"""Walking and transposing nested dicts."""

from __future__ import annotations

import pytest

from sample_factory.utils.dicts import iterate_recursively, list_of_dicts_to_dict_of_lists


def test_iterate_recursively_yields_every_leaf_with_its_parent():
    d = {"a": 1, "b": {"c": 2, "d": {"e": 3}}, "f": [4]}
    leaves = {(key, str(value)) for _, key, value in iterate_recursively(d)}
    assert leaves == {("a", "1"), ("c", "2"), ("e", "3"), ("f", "[4]")}


def test_iterate_recursively_allows_replacing_leaves_in_place():
    d = {"obs": {"img": 2, "vec": 3}, "reward": 4}
    for parent, key, value in iterate_recursively(d):
        parent[key] = value * 10
    assert d == {"obs": {"img": 20, "vec": 30}, "reward": 40}


def test_list_of_dicts_to_dict_of_lists():
    assert list_of_dicts_to_dict_of_lists([{"a": 1, "b": 2}, {"a": 3}, {"b": 4, "c": 5}]) == {
        "a": [1, 3],
        "b": [2, 4],
        "c": [5],
    }
    assert list_of_dicts_to_dict_of_lists([]) == {}


def test_list_of_dicts_to_dict_of_lists_transposes_nested_dicts():
    stats = [{"reward": 1, "extra": {"kills": 2, "deaths": 3}}, {"reward": 4, "extra": {"kills": 5}}]
    assert list_of_dicts_to_dict_of_lists(stats) == {"reward": [1, 4], "extra": {"kills": [2, 5], "deaths": [3]}}


def test_list_of_dicts_to_dict_of_lists_refuses_dict_and_value_under_one_key():
    with pytest.raises(TypeError, match="'extra' holds a dict in some"):
        list_of_dicts_to_dict_of_lists([{"extra": {"kills": 1}}, {"extra": 2}])
