"""Functions for nested dicts (observation dicts, stats dicts) that callers need to walk or transpose."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def iterate_recursively(d: dict) -> Iterator[tuple[dict, Any, Any]]:
    """Yield ``(parent_dict, key, value)`` for every non-dict leaf of the nested dict ``d``, depth first.

    The parent dict comes with each leaf so that callers can replace leaves in place (``parent[key] = new``), which
    is how nested observation dicts are converted leaf by leaf. Replacing a leaf during the walk is safe; adding or
    removing keys is not.
    """
    for key, value in d.items():
        if isinstance(value, dict):
            yield from iterate_recursively(value)
        else:
            yield d, key, value


def list_of_dicts_to_dict_of_lists(list_of_dicts: list[dict]) -> dict[Any, Any]:
    """``[{"a": 1, "b": {"c": 2}}, {"a": 3, "b": {"c": 4}}]`` -> ``{"a": [1, 3], "b": {"c": [2, 4]}}``.

    Values are gathered per key, in list order; nested dicts are transposed the same way, level by level, so a
    nested stats dict becomes a nested dict of lists rather than a list of dicts. A key missing from some dicts gets
    only the values of the dicts that have it (stats of different episodes need not report the same keys). Under one
    key, values must be all dicts or all non-dicts.
    """
    gathered: dict[Any, list] = {}
    for d in list_of_dicts:
        for key, value in d.items():
            gathered.setdefault(key, []).append(value)
    return {key: _transpose_values(key, values) for key, values in gathered.items()}


def _transpose_values(key: Any, values: list) -> Any:
    nested = [isinstance(value, dict) for value in values]
    if all(nested):
        return list_of_dicts_to_dict_of_lists(values)
    if any(nested):
        raise TypeError(f"list_of_dicts_to_dict_of_lists: {key!r} holds a dict in some dicts and a non-dict in others")
    return values
