"""Configuring a ``DoomGame`` for one player: scenario, screen, buttons, variables, networking and bots.

Pure configuration (no engine is started here), so the envs can build their spaces before the first reset and
rebuild a fresh game object for every start-up retry.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from sample_factory.envs.env_utils import require_optional_module
from sf_examples.vizdoom.doom.action_space import DEATHMATCH_BUTTONS
from sf_examples.vizdoom.doom.lifecycle import temp_dir
from sf_examples.vizdoom.doom.scenarios import TICS_PER_SECOND, ActionKind, DoomSpec, scenario_file

# (rendered resolution, aspect) -> ViZDoom resolution; frames are downscaled to --res_w x --res_h afterwards
NATIVE_RESOLUTION = {False: "RES_160X120", True: "RES_256X144"}
# deathmatch rules shared by bot games and self-play: instant forced respawn far from the killer, no cheats
DEATHMATCH_RULES = (
    "-deathmatch +sv_forcerespawn 1 +sv_noautoaim 1 +sv_respawnprotect 1 +sv_spawnfarthest 1 +sv_nocrouch 1 "
    "+viz_nocheat 1"
)
_BOT_SKILL_KEYS = ("aiming", "perfection", "reaction", "isp")


def vizdoom() -> Any:
    """The ``vizdoom`` module, or an error that names the pip extra to install."""
    return require_optional_module("vizdoom", extra="vizdoom", what="VizDoom envs")


@dataclass
class NetworkRole:
    """This player's place in a networked deathmatch: the host waits for ``num_players`` nodes on ``port``."""

    host: bool
    num_players: int
    player_index: int
    port: int = 0


@dataclass
class GameOptions:
    """Per-instance choices that are not part of the scenario spec."""

    wide_aspect_ratio: bool = False
    window_visible: bool = False
    timeout_tics: int | None = None
    bot_difficulty: int | None = None
    seed: int | None = None
    resolution: str | None = None  # e.g. "256x144": a ViZDoom resolution instead of the aspect ratio's default
    async_mode: bool = False  # the engine runs in real time instead of waiting for each action
    spectator: bool = False  # a human plays through the window; the agent's actions are ignored
    show_automap: bool = False  # also render the automap (the env's render() then shows it)


def screen_resolution(options: GameOptions) -> str:
    """ViZDoom's ``ScreenResolution`` member name: ``options.resolution`` ("WxH") or the aspect ratio's default."""
    if options.resolution is None:
        return NATIVE_RESOLUTION[options.wide_aspect_ratio]
    name = "RES_" + options.resolution.upper()
    if not hasattr(vizdoom().ScreenResolution, name):
        choices = sorted(n[4:].lower() for n in dir(vizdoom().ScreenResolution) if n.startswith("RES_"))
        raise ValueError(f"resolution {options.resolution!r} is not one of ViZDoom's: {choices}")
    return name


def timelimit_minutes(timeout_tics: int) -> float:
    """Deathmatch games end through the netgame ``timelimit`` rule, which counts minutes."""
    return timeout_tics / (60.0 * TICS_PER_SECOND)


def configure_game(spec: DoomSpec, options: GameOptions, network: NetworkRole | None) -> Any:
    """A configured, not yet initialised ``DoomGame``."""
    vzd = vizdoom()
    game = vzd.DoomGame()
    game.load_config(scenario_file(spec.config))
    if spec.wad:
        game.set_doom_scenario_path(scenario_file(spec.wad))
    if spec.doom_map:
        game.set_doom_map(spec.doom_map)
    # ViZDoom writes its .ini to the working directory unless told otherwise
    game.set_doom_config_path(os.path.join(temp_dir(), "_vizdoom.ini"))
    game.set_window_visible(options.window_visible)
    game.set_sound_enabled(False)
    game.set_screen_resolution(getattr(vzd.ScreenResolution, screen_resolution(options)))
    game.set_screen_format(vzd.ScreenFormat.RGB24)
    # synchronous by default: the engine waits for every action (ASYNC runs in real time, for humans watching)
    mode = ("ASYNC_" if options.async_mode else "") + ("SPECTATOR" if options.spectator else "PLAYER")
    game.set_mode(getattr(vzd.Mode, mode))
    if options.show_automap:
        game.set_automap_buffer_enabled(True)
    buttons = DEATHMATCH_BUTTONS if spec.action_space is ActionKind.DEATHMATCH else None
    buttons = getattr(spec.action_space, "doom_buttons", buttons)  # a layout of action_space.py names its buttons
    if buttons:
        game.set_available_buttons([getattr(vzd.Button, name) for name in buttons])
    seed = spec.fixed_seed if spec.fixed_seed is not None else options.seed
    if seed is not None:
        game.set_seed(int(seed) % (2**31))
    timeout = options.timeout_tics if options.timeout_tics is not None else spec.timeout_tics
    if spec.deathmatch:
        _add_deathmatch_args(game, spec, options, network, timeout)
    elif timeout is not None:
        game.set_episode_timeout(int(timeout))
    return game


def _add_deathmatch_args(
    game: Any, spec: DoomSpec, options: GameOptions, network: NetworkRole | None, timeout: int | None
) -> None:
    network = network or NetworkRole(host=True, num_players=1, player_index=0)
    if network.host:
        args = f"-host {network.num_players} -port {network.port} -netmode 0 {DEATHMATCH_RULES}"
        args += f" +viz_respawn_delay {spec.respawn_delay:g}"
        if timeout is not None:
            args += f" +timelimit {timelimit_minutes(timeout):.4f}"
        game.add_game_args(args)
        if options.bot_difficulty is not None:
            game.add_game_args(f"+viz_bots_path {bots_file(options.bot_difficulty)}")
    else:
        game.add_game_args(f"-join 127.0.0.1:{network.port}")
    game.add_game_args(f"+name Agent{network.player_index} +colorset {network.player_index % 8}")


def bots_file(difficulty: int) -> str:
    """A copy of the shipped ``bots.cfg`` with every skill stat set to ``difficulty`` (0-100); returns its path."""
    if not 0 <= difficulty <= 100:
        raise ValueError(f"--start_bot_difficulty={difficulty} must be within 0..100")
    path = os.path.join(temp_dir(), f"bots_{difficulty}.cfg")
    if not os.path.isfile(path):
        shipped = os.path.join(os.path.dirname(vizdoom().__file__), "bots.cfg")
        with open(shipped) as f:
            text = f.read()
        pattern = re.compile(rf"^(\s*(?:{'|'.join(_BOT_SKILL_KEYS)})\s+)\d+", re.MULTILINE)
        with open(path, "w") as f:
            f.write(pattern.sub(lambda m: f"{m.group(1)}{difficulty}", text))
    return path


def add_bots(game: Any, num_bots: int) -> None:
    """Replace whatever bots the map has with ``num_bots`` built-in bots (host only, after init/new episode)."""
    game.send_game_command("removebots")
    for _ in range(num_bots):
        game.send_game_command("addbot")
