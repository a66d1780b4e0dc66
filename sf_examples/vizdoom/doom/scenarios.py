"""The table of ``doom_*`` envs: which shipped scenario each one plays, with which actions, players and bots.

Only the ``.cfg``/``.wad`` files inside the ``vizdoom`` pip package are used. Where Sample Factory 2 used custom
maps that the package does not ship, the closest shipped scenario stands in (see ``docs/vizdoom.md``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum

from sample_factory.envs.env_utils import require_optional_module


class ActionKind(str, Enum):
    """How the policy's actions map to ViZDoom buttons (see ``action_space.py``)."""

    SINGLE_BUTTON = "single_button"  # Discrete: no-op or exactly one of the scenario's buttons
    DEATHMATCH = "deathmatch"  # Tuple: movement, strafing, attack, run, weapon choice, discretized turning


@dataclass(frozen=True)
class DoomSpec:
    """Everything that distinguishes one ``doom_*`` env from another.

    ``timeout_tics`` overrides the scenario's episode length (None keeps the .cfg value); ``num_agents`` > 1
    makes a self-play match over loopback networking; ``num_bots`` adds built-in bots to a deathmatch.
    """

    name: str
    config: str
    action_kind: ActionKind = ActionKind.SINGLE_BUTTON
    wad: str | None = None
    doom_map: str | None = None
    reward_scale: float = 1.0
    timeout_tics: int | None = None
    deathmatch: bool = False
    measurements: bool = False
    num_agents: int = 1
    num_bots: int = 0
    fixed_seed: int | None = None
    extra_game_args: tuple[str, ...] = field(default_factory=tuple)

    @property
    def multiplayer(self) -> bool:
        """Bots or several agents need a networked (hosted) deathmatch game."""
        return self.deathmatch


TICS_PER_SECOND = 35
_MINUTE = 60 * TICS_PER_SECOND

DOOM_ENVS: tuple[DoomSpec, ...] = (
    # rewards of basic and deadly_corridor are in the hundreds; scaled so values and the reported reward stay O(1)
    DoomSpec("doom_basic", "basic.cfg", reward_scale=0.01),
    DoomSpec("doom_my_way_home", "my_way_home.cfg"),
    DoomSpec("doom_deadly_corridor", "deadly_corridor.cfg", reward_scale=0.01),
    DoomSpec("doom_defend_the_center", "defend_the_center.cfg"),
    DoomSpec("doom_defend_the_line", "defend_the_line.cfg"),
    DoomSpec("doom_health_gathering", "health_gathering.cfg", reward_scale=0.01),
    DoomSpec("doom_health_gathering_supreme", "health_gathering_supreme.cfg", reward_scale=0.01),
    DoomSpec("doom_take_cover", "take_cover.cfg", reward_scale=0.01),
    DoomSpec("doom_predict_position", "predict_position.cfg"),
    # deathmatch family: CIG 2016 competition maps shipped as cig.wad (map01: rocket-launcher duel arena,
    # map02: full deathmatch with weapon and item pickups)
    DoomSpec(
        "doom_deathmatch_bots", "cig.cfg", ActionKind.DEATHMATCH, wad="cig.wad", doom_map="map02",
        timeout_tics=4 * _MINUTE, deathmatch=True, measurements=True, num_bots=7,
    ),
    DoomSpec(
        "doom_duel_bots", "cig.cfg", ActionKind.DEATHMATCH, wad="cig.wad", doom_map="map01",
        timeout_tics=4 * _MINUTE, deathmatch=True, measurements=True, num_bots=1,
    ),
    DoomSpec(
        "doom_duel", "cig.cfg", ActionKind.DEATHMATCH, wad="cig.wad", doom_map="map01",
        timeout_tics=4 * _MINUTE, deathmatch=True, measurements=True, num_agents=2,
    ),
    DoomSpec(
        "doom_deathmatch_full", "cig.cfg", ActionKind.DEATHMATCH, wad="cig.wad", doom_map="map02",
        timeout_tics=4 * _MINUTE, deathmatch=True, measurements=True, num_agents=4, num_bots=4,
    ),
    # throughput benchmark: the single-player "deathmatch" arena (many monsters, projectiles, pickups) with a fixed
    # seed and the full deathmatch action/measurement interface: heavy to render and simulate, and reproducible
    DoomSpec(
        "doom_benchmark", "deathmatch.cfg", ActionKind.DEATHMATCH, measurements=True, fixed_seed=42,
        timeout_tics=2 * _MINUTE,
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
