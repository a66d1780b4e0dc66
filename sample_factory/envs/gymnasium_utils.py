"""Bridges from the legacy ``gym`` package to Gymnasium, the API this library is written against.

Envs written for old ``gym`` still exist (and Sample Factory 2 examples wrap them); their spaces are not Gymnasium
spaces, so isinstance checks in the model and the buffers would miss them. ``convert_space`` rebuilds such a space
as the equivalent Gymnasium one. ``gym`` itself is never imported: its spaces are recognised by class name and
attributes, so this works whether or not ``gym`` is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces


def _box(space: Any) -> spaces.Box:
    dtype = np.dtype(space.dtype) if space.dtype is not None else np.float32
    return spaces.Box(low=np.asarray(space.low), high=np.asarray(space.high), shape=tuple(space.shape), dtype=dtype)


def _discrete(space: Any) -> spaces.Discrete:
    return spaces.Discrete(int(space.n), start=int(getattr(space, "start", 0)))


def _multi_discrete(space: Any) -> spaces.MultiDiscrete:
    return spaces.MultiDiscrete(np.asarray(space.nvec), dtype=np.dtype(getattr(space, "dtype", None) or np.int64))


def _multi_binary(space: Any) -> spaces.MultiBinary:
    n = space.n
    return spaces.MultiBinary(int(n) if np.isscalar(n) else [int(x) for x in n])


def _tuple(space: Any) -> spaces.Tuple:
    return spaces.Tuple([convert_space(s) for s in space.spaces])


def _dict(space: Any) -> spaces.Dict:
    return spaces.Dict({key: convert_space(s) for key, s in space.spaces.items()})


# class names of gym.spaces that have a Gymnasium equivalent
_CONVERTERS: dict[str, Callable[[Any], spaces.Space]] = {
    "Box": _box,
    "Discrete": _discrete,
    "MultiDiscrete": _multi_discrete,
    "MultiBinary": _multi_binary,
    "Tuple": _tuple,
    "Dict": _dict,
}


def convert_space(space: Any) -> spaces.Space:
    """The Gymnasium space equivalent to ``space`` (a legacy ``gym`` space), converted recursively.

    A Gymnasium space is returned as is (the same object). Box (bounds, shape, dtype), Discrete (with ``start``),
    MultiDiscrete, MultiBinary, Tuple and Dict are converted; subclasses of those convert as their base class.
    Anything else raises ``TypeError``: the env must then expose a Gymnasium space itself.
    """
    if isinstance(space, spaces.Space):
        return space
    for cls in type(space).__mro__:
        converter = _CONVERTERS.get(cls.__name__)
        if converter is not None:
            return converter(space)
    raise TypeError(
        f"convert_space cannot convert {space!r} (type {type(space).__module__}.{type(space).__qualname__}): only "
        f"{', '.join(_CONVERTERS)} spaces have Gymnasium equivalents; give the env a gymnasium.spaces space instead"
    )


def patch_non_gymnasium_env(env: Any) -> Any:
    """Make an env written for legacy ``gym`` look like a Gymnasium env where this library looks; returns ``env``.

    Its ``observation_space`` and ``action_space`` are replaced by their Gymnasium equivalents (:func:`convert_space`)
    and a missing ``render_mode`` becomes None. The env object itself is changed (no wrapper is added), so
    attributes the user's code reads on it stay where they were. Its ``reset``/``step`` must already follow the
    Gymnasium API (``reset() -> (obs, info)``, ``step() -> (obs, reward, terminated, truncated, info)``).
    """
    for name in ("observation_space", "action_space"):
        space = getattr(env, name, None)
        if space is None:
            raise TypeError(f"{type(env).__name__} has no {name}: an env must declare its {name} as an attribute")
        converted = convert_space(space)
        if converted is not space:
            setattr(env, name, converted)
    if not hasattr(env, "render_mode"):
        env.render_mode = None
    return env
