"""A dict of (nested) tensors that can be indexed and written to as a whole.

Trajectory buffers, batches and model outputs are TensorDicts: ``td[idx]``
indexes every leaf with the same index and returns a TensorDict of views,
``td[idx] = other`` writes every leaf in place. No copies are made unless asked.
Leaves may also be numpy arrays (views of the same buffers on the env side), and numpy arrays may be written into
tensor leaves: env outputs arrive as numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch import Tensor


class TensorDict(dict):
    """``dict[str, Tensor | TensorDict]`` with whole-dict indexing and attribute access."""

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return dict.__getitem__(self, key)
        return TensorDict({k: v[key] for k, v in self.items()})

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, str):
            if isinstance(value, dict) and not isinstance(value, TensorDict):
                value = TensorDict(value)
            dict.__setitem__(self, key, value)
            return
        if isinstance(value, dict):
            for k, v in value.items():
                _write(dict.__getitem__(self, k), key, v)
        else:
            for leaf in self.values():
                _write(leaf, key, value)

    def __getattr__(self, key: str) -> Any:
        try:
            return dict.__getitem__(self, key)
        except KeyError as exc:
            raise AttributeError(key) from exc

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __getstate__(self) -> dict:
        return dict(self)

    def __setstate__(self, state: dict) -> None:
        self.update(state)

    def apply(self, fn: Callable[[Tensor], Tensor]) -> TensorDict:
        """A new TensorDict with ``fn`` applied to every leaf tensor."""
        return TensorDict({k: v.apply(fn) if isinstance(v, TensorDict) else fn(v) for k, v in self.items()})

    def to(self, device: torch.device | str, non_blocking: bool = False) -> TensorDict:
        return self.apply(lambda t: t.to(device, non_blocking=non_blocking))

    def clone(self) -> TensorDict:
        return self.apply(lambda t: t.clone())

    def share_memory_(self) -> TensorDict:
        for v in self.values():
            v.share_memory_()
        return self

    def leaves(self) -> Iterator[Tensor]:
        for v in self.values():
            if isinstance(v, TensorDict):
                yield from v.leaves()
            else:
                yield v

    def numel_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.leaves())


def _write(leaf: Any, key: Any, value: Any) -> None:
    """``leaf[key] = value``; a numpy ``value`` written into a tensor leaf is first wrapped (no copy on CPU).

    torch refuses ``tensor[idx] = ndarray``; wrapping with ``torch.as_tensor`` on the leaf's device lets the usual
    in-place copy cast the dtype (int64 rewards into a float32 buffer) exactly as it does for tensors.
    """
    if isinstance(value, np.ndarray) and isinstance(leaf, Tensor):
        value = torch.as_tensor(value, device=leaf.device)
    leaf[key] = value


def cat_tensordicts(lst: list[TensorDict]) -> TensorDict:
    """One TensorDict whose every leaf is the concatenation along dim 0 of that leaf in each of ``lst``, in order.

    Used to join trajectories or batches that were collected separately; nested dicts are concatenated leaf by
    leaf. A leaf that is a numpy array in every dict is joined with ``np.concatenate`` and stays numpy. All dicts
    must have the same keys at every level: a key missing from one would silently give leaves of different lengths,
    so it is an error.
    """
    if not lst:
        raise ValueError("cat_tensordicts needs at least one TensorDict, got an empty list")
    return _cat_dicts(lst, path="")


def _cat_dicts(dicts: list[dict], path: str) -> TensorDict:
    keys = list(dicts[0].keys())
    for i, d in enumerate(dicts[1:], start=1):
        if set(d.keys()) != set(keys):
            where = f" under {path!r}" if path else ""
            raise KeyError(
                f"cat_tensordicts: TensorDict {i} has keys {sorted(d.keys())}{where} but TensorDict 0 has "
                f"{sorted(keys)}; all TensorDicts must have the same keys"
            )
    out = TensorDict()
    for key in keys:
        parts = [d[key] for d in dicts]
        key_path = f"{path}.{key}" if path else key
        nested = [isinstance(part, dict) for part in parts]
        if all(nested):
            out[key] = _cat_dicts(parts, key_path)
        elif any(nested):
            raise TypeError(f"cat_tensordicts: {key_path!r} is a dict in some TensorDicts and a tensor in others")
        else:
            out[key] = _cat_leaves(parts, key_path)
    return out


def _cat_leaves(parts: list[Any], key_path: str) -> Tensor | np.ndarray:
    is_numpy = [isinstance(part, np.ndarray) for part in parts]
    if all(is_numpy):
        return np.concatenate(parts, axis=0)
    if any(is_numpy):
        raise TypeError(
            f"cat_tensordicts: {key_path!r} is a numpy array in some TensorDicts and a tensor in others; "
            f"convert them to one kind first (torch.from_numpy or tensor.numpy())"
        )
    return torch.cat(parts, dim=0)


def copy_slots(src: TensorDict, slots: Tensor, dst: TensorDict) -> None:
    """``dst[i] = src[slots[i]]`` for every leaf, written into the existing ``dst`` tensors.

    The one way trajectories leave the shared slot buffers (into a training batch or a consumer's private copy):
    a single ``index_select`` per leaf and no new allocation, so the slots can be freed right after.
    """
    for key, value in src.items():
        if isinstance(value, dict):
            copy_slots(value, slots, dst[key])
        else:
            torch.index_select(value, 0, slots, out=dst[key])
