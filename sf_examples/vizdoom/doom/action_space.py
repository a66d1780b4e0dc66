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


def make_action_space(kind: ActionKind | gym.Space, num_buttons: int) -> gym.Space:
    """The policy's action space for a scenario with ``num_buttons`` buttons; a space given by the spec is kept."""
    if isinstance(kind, gym.Space):
        return kind
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


def _part_buttons(part: gym.Space) -> int:
    """Buttons one part of an action space drives: Discrete(n) n-1 exclusive ones (1 for n=2), a delta per value."""
    if isinstance(part, Discretized):
        return 1
    if isinstance(part, gym.spaces.Discrete):
        return max(int(part.n) - 1, 1)
    if isinstance(part, gym.spaces.Box):
        return int(np.prod(part.shape))
    raise ValueError(f"ViZDoom actions cannot be built from {part}: use Discrete, Discretized or Box parts")


def num_buttons_of(action_space: gym.Space) -> int:
    """How many of the scenario's buttons ``action_space`` drives (parts in order, see the module docstring)."""
    if isinstance(action_space, gym.spaces.Tuple):
        return sum(_part_buttons(part) for part in action_space.spaces)
    if isinstance(action_space, gym.spaces.Discrete) and not isinstance(action_space, Discretized):
        return int(action_space.n) - 1  # no-op + one button each
    return _part_buttons(action_space)


def _fill_part(part: gym.Space, value: Any, buttons: list[float], first: int) -> None:
    if isinstance(part, Discretized):
        buttons[first] = _turn_degrees(value, part)
    elif isinstance(part, gym.spaces.Discrete):
        index = int(np.asarray(value).reshape(()))
        if part.n == 2:
            buttons[first] = float(index)
        elif index:
            buttons[first + index - 1] = 1.0
    else:
        values = np.asarray(value, dtype=np.float64).reshape(-1)
        buttons[first : first + len(values)] = values.tolist()


class ButtonMapper:
    """Turns a policy action into the list of button values ``DoomGame.make_action`` expects.

    A ``Discrete(1 + n)`` space presses nothing or one of ``n`` buttons. A ``Tuple`` drives the buttons part by
    part, in order: ``Discrete(2)`` one button, ``Discrete(n)`` ``n - 1`` mutually exclusive buttons (0 presses
    none), ``Discretized`` one delta button (e.g. degrees of turning), ``Box`` one delta button per value.
    """

    def __init__(self, action_space: gym.Space, num_buttons: int) -> None:
        self.action_space = action_space
        self.tuple_actions = isinstance(action_space, gym.spaces.Tuple)
        self.parts = list(action_space.spaces) if self.tuple_actions else [action_space]
        self.single_button = not self.tuple_actions and isinstance(action_space, gym.spaces.Discrete)
        needed = num_buttons_of(action_space)
        if needed != num_buttons:
            raise ValueError(
                f"the action space {action_space} drives {needed} buttons but the scenario has {num_buttons}: list "
                f"{needed} buttons in the scenario's .cfg (available_buttons) or choose a matching action space"
            )
        self.num_buttons = num_buttons
        self.table = single_button_table(num_buttons).tolist() if self.single_button else None
        self.first_button: list[int] = []
        self.delta_buttons: list[int] = []
        first = 0
        for part in self.parts:
            self.first_button.append(first)
            count = _part_buttons(part)
            if isinstance(part, (Discretized, gym.spaces.Box)):
                self.delta_buttons.extend(range(first, first + count))
            first += count

    def __call__(self, action: Any) -> list[float]:
        if self.single_button:
            index = int(np.asarray(action).reshape(()))
            if not 0 <= index < len(self.table):
                raise ValueError(f"action {index} is outside the action space {self.action_space}")
            return list(self.table[index])
        values = action if self.tuple_actions else [action]
        buttons = [0.0] * self.num_buttons
        for part, first, value in zip(self.parts, self.first_button, values, strict=True):
            _fill_part(part, value, buttons, first)
        return buttons

    def without_deltas(self, buttons: list[float]) -> list[float]:
        """The same buttons with the delta buttons zeroed: for the later tics of a step played tic by tic."""
        if not self.delta_buttons:
            return buttons
        held = list(buttons)
        for index in self.delta_buttons:
            held[index] = 0.0
        return held


# ---- Sample Factory 2's layouts ---------------------------------------------------------------------------------
# Each layout names the buttons it drives (``space.doom_buttons``): an env given one of these spaces registers
# exactly those buttons with the game, whatever the scenario's .cfg lists.

_MOVE = ("MOVE_FORWARD", "MOVE_BACKWARD")
_STRAFE = ("MOVE_RIGHT", "MOVE_LEFT")
_TURN = ("TURN_RIGHT", "TURN_LEFT")
_WEAPONS = tuple(f"SELECT_WEAPON{slot}" for slot in range(1, NUM_WEAPON_SLOTS + 1))
FINE_TURN_DEGREES = 12.5  # per step, for the layouts that add fine aiming to the standard set


def _layout(parts: Sequence[tuple[gym.Space, Sequence[str]]]) -> gym.spaces.Tuple:
    space = gym.spaces.Tuple([part for part, _ in parts])
    space.doom_buttons = tuple(button for _, buttons in parts for button in buttons)
    assert len(space.doom_buttons) == num_buttons_of(space)
    return space


def _d(n: int) -> gym.spaces.Discrete:
    return gym.spaces.Discrete(n)


def _turn_delta(degrees: float = MAX_TURN_DEGREES, actions: int = TURN_ACTIONS) -> Discretized:
    return Discretized(actions, -degrees, degrees)


def doom_action_space_basic() -> gym.spaces.Tuple:
    """(none/left/right, attack): the buttons of ``basic.cfg``."""
    return _layout([(_d(3), ("MOVE_LEFT", "MOVE_RIGHT")), (_d(2), ("ATTACK",))])


def doom_turn_and_attack_only() -> gym.spaces.Tuple:
    """(none/turn left/turn right, attack): the buttons of ``defend_the_center.cfg``."""
    return _layout([(_d(3), ("TURN_LEFT", "TURN_RIGHT")), (_d(2), ("ATTACK",))])


def doom_action_space() -> gym.spaces.Tuple:
    """The standard set: (forward/back, strafe right/left, turn right/left, attack, run)."""
    return _layout([(_d(3), _MOVE), (_d(3), _STRAFE), (_d(3), _TURN), (_d(2), ("ATTACK",)), (_d(2), ("SPEED",))])


def doom_action_space_extended() -> gym.spaces.Tuple:
    """The standard set plus use (doors, switches) and a weapon slot choice."""
    standard = [(_d(3), _MOVE), (_d(3), _STRAFE), (_d(3), _TURN), (_d(2), ("ATTACK",)), (_d(2), ("SPEED",))]
    return _layout([*standard, (_d(2), ("USE",)), (_d(NUM_WEAPON_SLOTS + 1), _WEAPONS)])


def doom_action_space_discrete() -> gym.spaces.Tuple:
    """(forward/back, strafe, turn, attack, run, weapon slot): turning by whole button presses."""
    return _layout([
        (_d(3), _MOVE), (_d(3), _STRAFE), (_d(3), _TURN), (_d(2), ("ATTACK",)), (_d(2), ("SPEED",)),
        (_d(NUM_WEAPON_SLOTS + 1), _WEAPONS),
    ])  # fmt: skip


def doom_action_space_discrete_no_weap() -> gym.spaces.Tuple:
    """:func:`doom_action_space_discrete` without the weapon choice."""
    return _layout([(_d(3), _MOVE), (_d(3), _STRAFE), (_d(3), _TURN), (_d(2), ("ATTACK",)), (_d(2), ("SPEED",))])


def doom_action_space_discretized() -> gym.spaces.Tuple:
    """(forward/back, strafe, attack, run, weapon slot, turn in degrees): the deathmatch envs' layout."""
    space = deathmatch_action_space()
    space.doom_buttons = DEATHMATCH_BUTTONS
    return space


def doom_action_space_discretized_no_weap() -> gym.spaces.Tuple:
    """:func:`doom_action_space_discretized` without the weapon choice."""
    return _layout([
        (_d(3), _MOVE), (_d(3), _STRAFE), (_d(2), ("ATTACK",)), (_d(2), ("SPEED",)),
        (_turn_delta(), ("TURN_LEFT_RIGHT_DELTA",)),
    ])  # fmt: skip


def doom_action_space_continuous_no_weap() -> gym.spaces.Tuple:
    """(forward/back, strafe, attack, run, turn): turning as a continuous delta in degrees."""
    turn = gym.spaces.Box(-MAX_TURN_DEGREES, MAX_TURN_DEGREES, shape=(1,), dtype=np.float32)
    return _layout([
        (_d(3), _MOVE), (_d(3), _STRAFE), (_d(2), ("ATTACK",)), (_d(2), ("SPEED",)),
        (turn, ("TURN_LEFT_RIGHT_DELTA",)),
    ])  # fmt: skip


def doom_action_space_full_discretized(with_use: bool = False) -> gym.spaces.Tuple:
    """Everything a human uses: the discretized set, fine aiming up/down, and the use button ``with_use``."""
    parts = [
        (_d(3), _MOVE), (_d(3), _STRAFE), (_d(2), ("ATTACK",)), (_d(2), ("SPEED",)),
        (_d(NUM_WEAPON_SLOTS + 1), _WEAPONS), (_turn_delta(), ("TURN_LEFT_RIGHT_DELTA",)),
        (_turn_delta(FINE_TURN_DEGREES, 11), ("LOOK_UP_DOWN_DELTA",)),
    ]  # fmt: skip
    if with_use:
        parts.insert(4, (_d(2), ("USE",)))
    return _layout(parts)


def key_name(key: Any) -> str:
    """A key from a keyboard library (an object with ``name``/``char``) or a plain string, lower case."""
    name = getattr(key, "char", None) or getattr(key, "name", None) or str(key)
    return str(name).lower().removeprefix("key.")


def key_to_action_basic(key: Any) -> tuple[int, int] | None:
    """A human's key as an action of :func:`doom_action_space_basic` (arrows move, space/ctrl shoots); None for
    keys without an action."""
    return {"left": (1, 0), "a": (1, 0), "right": (2, 0), "d": (2, 0), "space": (0, 1), "ctrl": (0, 1)}.get(
        key_name(key)
    )
