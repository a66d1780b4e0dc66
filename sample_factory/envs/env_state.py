"""Saving and restoring an env's state as plain data, for exact resume in serial synchronous mode.

A checkpoint may hold only what ``torch.load(..., weights_only=True)`` accepts (tensors, numbers, strings, lists,
tuples, dicts), so env state is stored as such data, never pickled objects. Two ways to get it:

- the env (or any wrapper in its chain) defines ``get_state() -> dict`` and ``set_state(state)``, returning and
  accepting plain data; this is the way for simulators whose state lives outside Python (VizDoom, MuJoCo, ...);
- otherwise a generic snapshot of every object in the wrapper chain: attributes holding numbers, strings,
  ``None``, numpy arrays and scalars, ``np.random.Generator``/``RandomState`` (their bit-generator state), and
  lists, tuples and dicts of those. Spaces, specs and the wrapped env itself are configuration, not state, and are
  skipped. One attribute of any other type (a window, a simulator handle) makes the env unsupported: its snapshot
  is ``None`` and a resumed run restarts its episodes, as it would without this module.

Classic-control envs (CartPole, Pendulum, MountainCar, Acrobot) and pure-Python envs are covered by the generic
snapshot.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

_KIND = "__env_state_kind__"
_PLAIN_SCALARS = (bool, int, float, str, type(None))


class _Unsupported(Exception):
    """An attribute whose value cannot be written as plain data."""


def _encode(value: Any, where: str) -> Any:
    """Plain-data form of ``value``; raises ``_Unsupported`` naming ``where`` for anything else."""
    if isinstance(value, np.generic):  # before the plain scalars: np.float64 is a float subclass
        return {_KIND: "npscalar", "data": value.item(), "dtype": value.dtype.str}
    if isinstance(value, _PLAIN_SCALARS):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _NUMERIC_KINDS:  # strings or objects have no tensor form
            raise _Unsupported(f"{where} (array of {value.dtype})")
        return {_KIND: "ndarray", "dtype": value.dtype.str, **_array_tensor(value)}
    if isinstance(value, np.random.Generator):
        return {_KIND: "generator", "state": value.bit_generator.state}
    if isinstance(value, np.random.RandomState):
        name, keys, pos, has_gauss, cached = value.get_state()
        keys = {_KIND: "ndarray", "dtype": keys.dtype.str, **_array_tensor(keys)}
        return {_KIND: "randomstate", "state": (name, keys, pos, has_gauss, cached)}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if isinstance(value, list) else {_KIND: "tuple", "items": items}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _Unsupported(where)
        return {_KIND: "dict", "items": {k: _encode(v, f"{where}[{k!r}]") for k, v in value.items()}}
    raise _Unsupported(f"{where} ({type(value).__name__})")


_NUMERIC_KINDS = "biufc"  # numpy's kinds of bool, integer, unsigned, float and complex arrays


def _array_tensor(array: np.ndarray) -> dict[str, Any]:
    """``{"data": tensor}`` holding a copy of ``array``; for a dtype this torch has no tensor of (unsigned 16-64 bit
    integers before torch 2.3) its bytes, with ``"shape"`` to rebuild it."""
    array = np.array(array, copy=True)
    try:
        return {"data": torch.from_numpy(array)}
    except TypeError:
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        return {"data": torch.from_numpy(raw.copy()), "shape": list(array.shape)}


def _array(value: dict) -> np.ndarray:
    """The array ``_array_tensor`` stored (checkpoints written before byte storage have no ``"shape"``)."""
    dtype = np.dtype(value["dtype"])
    data = value["data"].numpy()
    if "shape" in value:
        return data.view(dtype).reshape(value["shape"]).copy()
    return data.astype(dtype, copy=True)


def _decode(value: Any, current: Any = None) -> Any:
    """Inverse of ``_encode``; random generators are restored into ``current`` when it is one (keeps identity)."""
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value[_KIND]
    if kind == "ndarray":
        return _array(value)
    if kind == "npscalar":
        return np.dtype(value["dtype"]).type(value["data"])
    if kind == "generator":
        generator = current if isinstance(current, np.random.Generator) else np.random.default_rng()
        generator.bit_generator.state = value["state"]
        return generator
    if kind == "randomstate":
        name, keys, pos, has_gauss, cached = value["state"]
        random_state = current if isinstance(current, np.random.RandomState) else np.random.RandomState()
        keys = _array(keys) if isinstance(keys, dict) else keys.numpy().copy()  # a tensor in older checkpoints
        random_state.set_state((name, keys, pos, has_gauss, cached))
        return random_state
    if kind == "tuple":
        return tuple(_decode(v) for v in value["items"])
    return {k: _decode(v) for k, v in value["items"].items()}


def _is_configuration(name: str, value: Any) -> bool:
    """Attributes that describe the env rather than hold its state."""
    return name == "env" or isinstance(value, (gym.Space, gym.envs.registration.EnvSpec))


def _chain(env: Any) -> list[Any]:
    """The env and every env it wraps, outermost first."""
    chain = [env]
    while hasattr(inner := getattr(chain[-1], "env", None), "step"):
        chain.append(inner)
    return chain


def _custom_state_owner(env: Any) -> Any | None:
    """The outermost object of the chain that implements ``get_state``/``set_state``, if any."""
    for obj in _chain(env):
        if callable(getattr(type(obj), "get_state", None)) and callable(getattr(type(obj), "set_state", None)):
            return obj
    return None


def capture_env_state(env: Any) -> tuple[dict | None, str]:
    """``(state, "")`` as plain data, or ``(None, reason)`` when this env's state cannot be captured."""
    owner = _custom_state_owner(env)
    if owner is not None:
        return {"custom": owner.get_state()}, ""
    layers = []
    try:
        for depth, obj in enumerate(_chain(env)):
            attrs = {
                name: _encode(value, f"{type(obj).__name__}.{name}")
                for name, value in vars(obj).items()
                if not _is_configuration(name, value)
            }
            layers.append({"type": type(obj).__qualname__, "depth": depth, "attrs": attrs})
    except _Unsupported as unsupported:
        return None, f"{unsupported} cannot be saved as plain data; define get_state()/set_state() on the env"
    return {"layers": layers}, ""


def restore_env_state(env: Any, state: dict) -> None:
    """Put back a state from ``capture_env_state`` into an env built the same way; ValueError if it does not fit."""
    if "custom" in state:
        owner = _custom_state_owner(env)
        if owner is None:
            raise ValueError("the saved env state came from get_state(), but this env has no set_state()")
        owner.set_state(state["custom"])
        return
    chain = _chain(env)
    layers = state["layers"]
    if [type(obj).__qualname__ for obj in chain] != [layer["type"] for layer in layers]:
        raise ValueError(
            f"the saved env state is for the wrappers {[layer['type'] for layer in layers]}, "
            f"this env has {[type(obj).__qualname__ for obj in chain]}"
        )
    for obj, layer in zip(chain, layers, strict=True):
        for name, value in layer["attrs"].items():
            setattr(obj, name, _decode(value, getattr(obj, name, None)))


def capture_global_rng_states() -> dict:
    """torch, numpy and Python ``random`` global generator states as plain data."""
    import random

    version, internal, gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "numpy": _encode(np.random.get_state(legacy=False), "numpy"),
        "python": (version, list(internal), gauss),
    }


def restore_global_rng_states(states: dict) -> None:
    """Inverse of ``capture_global_rng_states``."""
    import random

    torch.set_rng_state(states["torch"])
    np.random.set_state(_decode(states["numpy"]))
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
