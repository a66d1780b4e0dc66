"""Turning one actor's stored action row back into what its env's ``step`` expects.

The trajectory buffers hold every action as a flat numeric row (``Tuple`` actions concatenated, ``Discrete``
actions counted from 0); envs want ints with their own ``start``, tuples, shaped arrays or continuous values for
:class:`Discretized` spaces. The non-batched sampler, the sequential vectoriser of the batched sampler and the
evaluation tools all convert the same way, so the rule lives here once.
"""

from __future__ import annotations

import numpy as np

from sample_factory.envs.spaces.discretized import Discretized


def make_action_converter(action_space):
    """Returns ``row -> env action`` for one actor's stored action row.

    Tuple actions are stored flat (one component per Discrete part, ``prod(shape)``
    components per Box part); the converter cuts the row back into the parts.
    """
    import gymnasium as gym

    if isinstance(action_space, Discretized):
        return lambda a: action_space.to_continuous(int(a))
    if isinstance(action_space, gym.spaces.Discrete):
        start = int(action_space.start)
        return (lambda a: int(a) + start) if start else int
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return lambda a: np.asarray(a, dtype=np.int64)
    if isinstance(action_space, gym.spaces.Tuple):
        parts = [(make_action_converter(s), _num_components(s), _is_scalar_action(s)) for s in action_space.spaces]

        def convert(row):
            out, i = [], 0
            for conv, n, scalar in parts:
                out.append(conv(row[i]) if scalar else conv(row[i : i + n]))
                i += n
            return tuple(out)

        return convert
    if isinstance(action_space, gym.spaces.Box):
        shape = action_space.shape
        return lambda a: np.asarray(a, dtype=action_space.dtype).reshape(shape)
    return lambda a: a


def _is_scalar_action(space) -> bool:
    import gymnasium as gym

    return isinstance(space, gym.spaces.Discrete)


def _num_components(space) -> int:
    import gymnasium as gym

    if isinstance(space, gym.spaces.Discrete):
        return 1
    if isinstance(space, gym.spaces.MultiDiscrete):
        return len(space.nvec)
    return int(np.prod(space.shape))


def rows_are_env_actions(action_space) -> bool:
    """True when a stored action row already is the env's action, so a batch of rows can go to the env as is.

    That holds for ``Box``, ``MultiDiscrete``, ``MultiBinary`` and ``Discrete`` counted from 0; ``Tuple`` actions
    must be cut into parts, a shifted ``Discrete`` needs its ``start`` and :class:`Discretized` its continuous value.
    """
    import gymnasium as gym

    if isinstance(action_space, Discretized):
        return False
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.start) == 0
    return isinstance(action_space, (gym.spaces.Box, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary))
