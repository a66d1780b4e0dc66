"""How spaces lay out in the model and the buffers: observation dicts, action widths and masks.

A plain ``Box`` observation space appears to the model as the dict ``{"obs": space}``. An action occupies
``calc_num_actions`` numbers in the trajectory buffers and ``calc_num_action_parameters`` outputs of the policy head
(``Discrete(n)``: 1 and ``n``; ``Box`` of ``d`` elements: ``d`` and ``2 d``, means then log standard deviations;
``MultiDiscrete`` and ``Tuple``: the sums over their components, nesting allowed). An action mask has one entry per
discrete choice (``num_mask_entries``). An autoregressive policy head draws the sub-actions of
``autoregressive_sub_spaces`` one after the other.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def obs_space_dict(obs_space) -> dict[str, Any]:
    """A plain Box observation space appears to the model as the dict ``{"obs": space}``."""
    spaces = getattr(obs_space, "spaces", None)
    if isinstance(spaces, dict):
        return dict(spaces)
    return {"obs": obs_space}


def is_continuous_action_space(action_space: gym.Space) -> bool:
    """True for ``Box`` spaces (Gaussian policy); discrete and tuple spaces are not continuous as a whole."""
    return isinstance(action_space, gym.spaces.Box)


def unsupported_action_space(action_space: gym.Space) -> NotImplementedError:
    return NotImplementedError(f"Action space {action_space} is not supported: use Discrete, Box, MultiDiscrete, Tuple")


def _box_size(action_space: gym.spaces.Box) -> int:
    return int(np.prod(action_space.shape))


def as_tuple_space(action_space: gym.Space) -> gym.spaces.Tuple:
    """``MultiDiscrete`` seen as a tuple of independent ``Discrete`` components."""
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return gym.spaces.Tuple([gym.spaces.Discrete(int(n)) for n in action_space.nvec.flatten()])
    return action_space


def calc_num_actions(action_space: gym.Space) -> int:
    """How many numbers one action occupies in the buffers: Discrete 1, Box its size, tuples the sum of parts."""
    if isinstance(action_space, gym.spaces.Discrete):
        return 1
    if isinstance(action_space, gym.spaces.Box):
        return _box_size(action_space)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return int(action_space.nvec.size)
    if isinstance(action_space, gym.spaces.Tuple):
        return sum(calc_num_actions(space) for space in action_space.spaces)
    raise unsupported_action_space(action_space)


def calc_num_action_parameters(action_space: gym.Space) -> int:
    """Width of the raw policy output for ``action_space`` (see the module docstring for the layout)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.Box):
        return 2 * _box_size(action_space)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return int(action_space.nvec.sum())
    if isinstance(action_space, gym.spaces.Tuple):
        return sum(calc_num_action_parameters(space) for space in action_space.spaces)
    raise unsupported_action_space(action_space)


def is_all_discrete(action_space: gym.Space) -> bool:
    """True when every component is discrete (``Discrete``, ``MultiDiscrete``, tuples of them, nested)."""
    if isinstance(action_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        return True
    if isinstance(action_space, gym.spaces.Tuple):
        return all(is_all_discrete(space) for space in action_space.spaces)
    return False


def num_mask_entries(action_space: gym.Space) -> int:
    """Width of the action mask of a space: one entry per discrete choice; Box parts take none."""
    if isinstance(action_space, gym.spaces.Box):
        return 0
    if isinstance(action_space, gym.spaces.Tuple):
        return sum(num_mask_entries(space) for space in action_space.spaces)
    return calc_num_action_parameters(action_space)


def autoregressive_sub_spaces(action_space: gym.Space) -> list[gym.Space]:
    """The sub-action spaces in order: a ``MultiDiscrete``'s components, or a flat ``Tuple`` of Discrete and Box.

    Raises ValueError naming the fix for any other space (nested tuples included: their stored layout would not
    match the component-wise KL of the learner).
    """
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return [gym.spaces.Discrete(int(n)) for n in action_space.nvec.flatten()]
    if isinstance(action_space, gym.spaces.Tuple) and all(
        isinstance(space, (gym.spaces.Discrete, gym.spaces.Box)) for space in action_space.spaces
    ):
        return list(action_space.spaces)
    raise ValueError(
        f"--action_head=autoregressive needs a MultiDiscrete action space or a flat Tuple of Discrete and Box "
        f"spaces, the env has {action_space}: use --action_head=factorized"
    )
