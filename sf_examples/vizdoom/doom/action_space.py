"""Policy action spaces for VizDoom and their translation into ViZDoom button vectors.

Two layouts:

- ``single_button``: ``Discrete(1 + num_buttons)``; action 0 presses nothing, action ``i`` presses the scenario's
  ``i``-th button. Small and enough for the single-player tasks, whose buttons rarely need combining.
- ``deathmatch``: a ``Tuple`` of independent parts so the policy can run, strafe, turn and shoot at once
  (a flat Discrete over all combinations would have thousands of actions). Turning is a ``Discretized`` delta:
  categorical choices learn faster than a Gaussian here, while the env still receives degrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.spaces.discretized import Discretized
from sf_examples.vizdoom.doom.scenarios import ActionKind

NUM_WEAPON_SLOTS = 7
TURN_ACTIONS = 21
MAX_TURN_DEGREES = 30.0  # per env step (the delta is applied once per step, whatever the frameskip)

# ViZDoom button names, in the order they are registered with the game for the deathmatch layout
DEATHMATCH_BUTTONS: tuple[str, ...] = (
    "MOVE_FORWARD",
    "MOVE_BACKWARD",
    "MOVE_RIGHT",
    "MOVE_LEFT",
    "ATTACK",
    "SPEED",
    *(f"SELECT_WEAPON{slot}" for slot in range(1, NUM_WEAPON_SLOTS + 1)),
    "TURN_LEFT_RIGHT_DELTA",
)
_FORWARD, _BACKWARD, _RIGHT, _LEFT, _ATTACK, _SPEED = range(6)
_FIRST_WEAPON = 6
TURN_BUTTON_INDEX = len(DEATHMATCH_BUTTONS) - 1


def deathmatch_action_space() -> gym.spaces.Tuple:
    """(forward/back/none, right/left/none, attack, run, weapon slot or none, turn delta in degrees)."""
    return gym.spaces.Tuple(
        (
            gym.spaces.Discrete(3),
            gym.spaces.Discrete(3),
            gym.spaces.Discrete(2),
            gym.spaces.Discrete(2),
            gym.spaces.Discrete(NUM_WEAPON_SLOTS + 1),
            Discretized(TURN_ACTIONS, -MAX_TURN_DEGREES, MAX_TURN_DEGREES),
        )
    )


def make_action_space(kind: ActionKind, num_buttons: int) -> gym.Space:
    """The policy's action space for a scenario with ``num_buttons`` buttons (single_button layout)."""
    if kind is ActionKind.DEATHMATCH:
        return deathmatch_action_space()
    return gym.spaces.Discrete(1 + num_buttons)


def single_button_table(num_buttons: int) -> np.ndarray:
    """Row ``a`` is the button vector of action ``a``: row 0 all zeros, row ``i`` presses button ``i - 1``."""
    table = np.zeros((num_buttons + 1, num_buttons), dtype=np.float64)
    table[np.arange(1, num_buttons + 1), np.arange(num_buttons)] = 1.0
    return table


def _turn_degrees(part: Any, turn_space: Discretized) -> float:
    """Turning arrives in degrees from the sampler (floats) or as a raw index from ``space.sample()`` (ints)."""
    if isinstance(part, (float, np.floating)):
        return float(part)
    return float(turn_space.to_continuous(int(part)))


def deathmatch_buttons(action: Sequence[Any], turn_space: Discretized) -> list[float]:
    """Button vector (``DEATHMATCH_BUTTONS`` order) of one deathmatch Tuple action."""
    move, strafe, attack, run, weapon, turn = action
    buttons = [0.0] * len(DEATHMATCH_BUTTONS)
    move, strafe, weapon = int(move), int(strafe), int(weapon)
    if move:
        buttons[_FORWARD if move == 1 else _BACKWARD] = 1.0
    if strafe:
        buttons[_RIGHT if strafe == 1 else _LEFT] = 1.0
    buttons[_ATTACK] = float(int(attack))
    buttons[_SPEED] = float(int(run))
    if weapon:
        buttons[_FIRST_WEAPON + weapon - 1] = 1.0
    buttons[TURN_BUTTON_INDEX] = _turn_degrees(turn, turn_space)
    return buttons


class ButtonMapper:
    """Turns a policy action into the list of button values ``DoomGame.make_action`` expects."""

    def __init__(self, action_space: gym.Space, num_buttons: int) -> None:
        self.action_space = action_space
        self.tuple_actions = isinstance(action_space, gym.spaces.Tuple)
        self.turn_space = action_space.spaces[-1] if self.tuple_actions else None
        self.table = None if self.tuple_actions else single_button_table(num_buttons).tolist()
        self.delta_button = TURN_BUTTON_INDEX if self.tuple_actions else None

    def __call__(self, action: Any) -> list[float]:
        if self.tuple_actions:
            return deathmatch_buttons(action, self.turn_space)
        index = int(np.asarray(action).reshape(()))
        if not 0 <= index < len(self.table):
            raise ValueError(f"action {index} is outside the action space {self.action_space}")
        return list(self.table[index])

    def without_deltas(self, buttons: list[float]) -> list[float]:
        """The same buttons with the turning delta zeroed: for the later tics of a step played tic by tic."""
        if self.delta_button is None:
            return buttons
        held = list(buttons)
        held[self.delta_button] = 0.0
        return held
