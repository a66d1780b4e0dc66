"""Functions for nested dicts (observation dicts, stats dicts) that callers need to walk or transpose."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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


def iterate_recursively_with_prefix(d: dict, prefix: list | None = None) -> Iterator[tuple[dict, Any, Any, list]]:
    """:func:`iterate_recursively` that also yields each leaf's key path: ``(parent_dict, key, value, path)``.

    ``path`` lists the keys from the top of ``d`` down to the leaf, the leaf's key included, after ``prefix``:
    ``{"obs": {"rgb": x}}`` yields ``(d["obs"], "rgb", x, ["obs", "rgb"])``, ready for naming summaries
    (``"/".join(path)``).
    """
    prefix = [] if prefix is None else list(prefix)
    for key, value in d.items():
        path = [*prefix, key]
        if isinstance(value, dict):
            yield from iterate_recursively_with_prefix(value, path)
        else:
            yield d, key, value, path


def iter_dicts_recursively(d1: dict, d2: dict) -> Iterator[tuple[dict, dict, Any, Any, Any]]:
    """Walk two dicts of the same structure together: ``(parent1, parent2, key, value1, value2)`` per leaf of ``d1``.

    For copying one nested dict of tensors into another (``parent2[key][...] = value1``). ``d2`` must have every key
    of ``d1``, nested the same way; a missing key raises a KeyError that names it.
    """
    for key, value1 in d1.items():
        if key not in d2:
            raise KeyError(f"iter_dicts_recursively: the second dict lacks key {key!r} that the first has")
        value2 = d2[key]
        if isinstance(value1, dict):
            if not isinstance(value2, dict):
                raise TypeError(f"iter_dicts_recursively: {key!r} is a dict in the first dict but not in the second")
            yield from iter_dicts_recursively(value1, value2)
        else:
            yield d1, d2, key, value1, value2


def copy_dict_structure(d: dict) -> dict:
    """A new nested dict with the keys of ``d`` at every level and ``None`` at every leaf, to be filled in."""
    return {key: copy_dict_structure(value) if isinstance(value, dict) else None for key, value in d.items()}


def dict_of_lists_append(d: dict, new_data: dict) -> None:
    """Append every leaf of ``new_data`` to the list at the same place in ``d``, creating lists and sub-dicts.

    Collects a stream of nested dicts (per-step stats) into one nested dict of lists, in place.
    """
    for key, value in new_data.items():
        if isinstance(value, dict):
            dict_of_lists_append(d.setdefault(key, {}), value)
        else:
            d.setdefault(key, []).append(value)


def dict_of_lists_append_idx(d: dict, new_data: dict, index: Any) -> None:
    """:func:`dict_of_lists_append` of ``leaf[index]`` for every leaf of ``new_data``: one sample of a batched dict
    (``index`` an int or any index the leaves accept)."""
    for key, value in new_data.items():
        if isinstance(value, dict):
            dict_of_lists_append_idx(d.setdefault(key, {}), value, index)
        else:
            d.setdefault(key, []).append(value[index])


_MISSING = object()


def get_first_present(d: dict, keys: Iterable[Any], default: Any = None) -> Any:
    """The value of the first of ``keys`` that ``d`` has, else ``default``: for a setting known under several names
    (a new one and the legacy ones it replaced). A key present with the value ``None`` counts as present."""
    for key in keys:
        value = d.get(key, _MISSING)
        if value is not _MISSING:
            return value
    return default
