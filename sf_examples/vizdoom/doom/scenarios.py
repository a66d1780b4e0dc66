"""The table of ``doom_*`` envs: which shipped scenario each one plays, with which actions, players and bots.

Only the ``.cfg``/``.wad`` files inside the ``vizdoom`` pip package are used. Where Sample Factory 2 used custom
maps that the package does not ship, the closest shipped scenario stands in (see ``docs/vizdoom.md``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import gymnasium as gym

from sample_factory.envs.env_utils import require_optional_module


class ActionKind(str, Enum):
    """How the policy's actions map to ViZDoom buttons (see ``action_space.py``)."""

    SINGLE_BUTTON = "single_button"  # Discrete: no-op or exactly one of the scenario's buttons
    DEATHMATCH = "deathmatch"  # Tuple: movement, strafing, attack, run, weapon choice, discretized turning


@dataclass(frozen=True)
class DoomSpec:
    """Everything that distinguishes one ``doom_*`` env from another (Sample Factory 2's leading fields first).

    ``env_spec_file``: a shipped ``.cfg`` name or a path to your own. ``action_space``: an :class:`ActionKind`, or a
    Gymnasium space whose parts map onto the scenario's buttons in order (``action_space.py``).
    ``reward_scaling`` multiplies every reward. ``default_timeout`` overrides the scenario's episode length in tics
    (None or <= 0 keeps the .cfg value); ``timelimit`` (minutes) does the same for deathmatch games and wins over it.
    ``num_agents`` > 1 makes a self-play match over loopback networking; ``num_bots`` adds built-in bots to a
    deathmatch; ``respawn_delay`` is the seconds a fragged player waits. ``extra_wrappers``: ``(wrapper_class,
    kwargs)`` pairs applied to each player's env after the family's own wrappers.
    """

    name: str
    env_spec_file: str
    action_space: ActionKind | gym.Space = ActionKind.SINGLE_BUTTON
    reward_scaling: float = 1.0
    default_timeout: int | None = None
    num_agents: int = 1
    num_bots: int = 0
    respawn_delay: float = 0.0
    timelimit: float | None = None
    extra_wrappers: tuple[tuple[type, dict[str, Any]], ...] = ()
    wad: str | None = None
    doom_map: str | None = None
    deathmatch: bool = False
    measurements: bool = False
    fixed_seed: int | None = None
    extra_game_args: tuple[str, ...] = field(default_factory=tuple)

    @property
    def multiplayer(self) -> bool:
        """Bots or several agents need a networked (hosted) deathmatch game."""
        return self.deathmatch

    @property
    def config(self) -> str:
        """The scenario file (the name this field had before it took Sample Factory 2's)."""
        return self.env_spec_file

    @property
    def timeout_tics(self) -> int | None:
        """Episode length in tics from ``timelimit`` or ``default_timeout``; None keeps the scenario's."""
        if self.timelimit is not None:
            return int(self.timelimit * 60 * TICS_PER_SECOND)
        return self.default_timeout if self.default_timeout is not None and self.default_timeout > 0 else None


TICS_PER_SECOND = 35
_MINUTE = 60 * TICS_PER_SECOND

DOOM_ENVS: tuple[DoomSpec, ...] = (
    # rewards of basic and deadly_corridor are in the hundreds; scaled so values and the reported reward stay O(1)
    DoomSpec("doom_basic", "basic.cfg", reward_scaling=0.01),
    DoomSpec("doom_my_way_home", "my_way_home.cfg"),
    DoomSpec("doom_deadly_corridor", "deadly_corridor.cfg", reward_scaling=0.01),
    DoomSpec("doom_defend_the_center", "defend_the_center.cfg"),
    DoomSpec("doom_defend_the_line", "defend_the_line.cfg"),
    DoomSpec("doom_health_gathering", "health_gathering.cfg", reward_scaling=0.01),
    DoomSpec("doom_health_gathering_supreme", "health_gathering_supreme.cfg", reward_scaling=0.01),
    DoomSpec("doom_take_cover", "take_cover.cfg", reward_scaling=0.01),
    DoomSpec("doom_predict_position", "predict_position.cfg"),
    # deathmatch family: CIG 2016 competition maps shipped as cig.wad (map01: rocket-launcher duel arena,
    # map02: full deathmatch with weapon and item pickups)
    DoomSpec(
        "doom_deathmatch_bots", "cig.cfg", ActionKind.DEATHMATCH, wad="cig.wad", doom_map="map02",
        timelimit=4.0, deathmatch=True, measurements=True, num_bots=7,
    ),
    DoomSpec(
        "doom_duel_bots", "cig.cfg", ActionKind.DEATHMATCH, wad="cig.wad", doom_map="map01",
        timelimit=4.0, deathmatch=True, measurements=True, num_bots=1,
    ),
    DoomSpec(
        "doom_duel", "cig.cfg", ActionKind.DEATHMATCH, wad="cig.wad", doom_map="map01",
        timelimit=4.0, deathmatch=True, measurements=True, num_agents=2,
    ),
    DoomSpec(
        "doom_deathmatch_full", "cig.cfg", ActionKind.DEATHMATCH, wad="cig.wad", doom_map="map02",
        timelimit=4.0, deathmatch=True, measurements=True, num_agents=4, num_bots=4,
    ),
    # throughput benchmark: the single-player "deathmatch" arena (many monsters, projectiles, pickups) with a fixed
    # seed and the full deathmatch action/measurement interface: heavy to render and simulate, and reproducible
    DoomSpec(
        "doom_benchmark", "deathmatch.cfg", ActionKind.DEATHMATCH, measurements=True, fixed_seed=42,
        default_timeout=2 * _MINUTE,
    ),
)  # fmt: skip

DOOM_SPECS: dict[str, DoomSpec] = {spec.name: spec for spec in DOOM_ENVS}


def doom_spec(env_name: str) -> DoomSpec:
    """The spec of ``env_name``; the error lists every VizDoom env."""
    if env_name not in DOOM_SPECS:
        raise KeyError(f"{env_name!r} is not a VizDoom env; choose one of {sorted(DOOM_SPECS)}")
    return DOOM_SPECS[env_name]


def scenarios_dir() -> str:
    """Folder of the scenario files shipped in the ``vizdoom`` pip package."""
    vzd = require_optional_module("vizdoom", extra="vizdoom", what="VizDoom envs")
    return vzd.scenarios_path


def scenario_file(name: str) -> str:
    """Absolute path of a shipped ``.cfg``/``.wad``; a missing file means an incompatible vizdoom release."""
    path = os.path.join(scenarios_dir(), name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} is missing: this VizDoom release does not ship {name!r} (need vizdoom>=1.2)")
    return path
