"""One ViZDoom player as a Gymnasium env: lazy start with retries, frameskip, headless by default, clean close.

Observations are the raw RGB screen (HWC, uint8); resizing, CHW layout, measurements and reward shaping are
wrappers (``wrappers.py``). The engine starts on the first ``reset()``, not in the constructor, so the spaces can
be read (e.g. by the runner) without paying for a game start.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import EnvCriticalError
from sample_factory.utils.utils import log
from sf_examples.vizdoom.doom.action_space import ButtonMapper, key_name, make_action_space
from sf_examples.vizdoom.doom.game_setup import GameOptions, NetworkRole, add_bots, configure_game, vizdoom
from sf_examples.vizdoom.doom.game_variables import DEATHMATCH_VARIABLES
from sf_examples.vizdoom.doom.lifecycle import prepare_engine_start, register_game, release_game
from sf_examples.vizdoom.doom.scenarios import ActionKind, DoomSpec

LOCK_FILE_PREFIX = "doom_start"


def spec_for(spec: DoomSpec | None, action_space: gym.Space | None, config_file: str | None) -> DoomSpec:
    """The spec of an env made from a spec, or from Sample Factory 2's (action space, .cfg file) pair."""
    if spec is None:
        if config_file is None:
            raise ValueError("VizdoomEnv needs a scenario: pass config_file=<.cfg name or path> or spec=<DoomSpec>")
        name = os.path.splitext(os.path.basename(config_file))[0]
        return DoomSpec(name, config_file, action_space if action_space is not None else ActionKind.SINGLE_BUTTON)
    if action_space is not None:
        return replace(spec, action_space=action_space)
    return spec


def doom_lock_file(max_parallel: int) -> str:
    """A lock file shared by the processes of this machine that start ViZDoom engines: hold it (``fcntl.flock``)
    around ``init()`` to start at most ``max_parallel`` groups of engines at once (one file per limit)."""
    return os.path.join(tempfile.gettempdir(), f"{LOCK_FILE_PREFIX}_{max_parallel}.lockfile")


def key_to_action_default(key: Any) -> tuple[int, ...] | None:
    """A human's key as an action of ``doom_action_space()``: W/S or arrows move, A/D strafe, left/right turn,
    ctrl/space shoots, shift runs; None for keys without an action."""
    name = key_name(key)
    table = {
        "w": (1, 0, 0, 0, 0), "up": (1, 0, 0, 0, 0), "s": (2, 0, 0, 0, 0), "down": (2, 0, 0, 0, 0),
        "d": (0, 1, 0, 0, 0), "a": (0, 2, 0, 0, 0), "right": (0, 0, 1, 0, 0), "left": (0, 0, 2, 0, 0),
        "ctrl": (0, 0, 0, 1, 0), "space": (0, 0, 0, 1, 0), "shift": (0, 0, 0, 0, 1),
    }  # fmt: skip
    return table.get(name)


START_ATTEMPTS = 3
TIC_BARRIER_TIMEOUT_S = 60.0


class VizdoomEnv(gym.Env):
    """A single ViZDoom player.

    ``tic_barrier`` is set for players of a self-play match stepped from several threads: their engines then
    advance one tic at a time and wait for each other after every tic. ViZDoom's netcode deadlocks when one
    engine runs several tics ahead and then idles while another still waits for its packets.
    """

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 35}

    def __init__(
        self,
        action_space: gym.Space | DoomSpec | None = None,
        config_file: str | None = None,
        coord_limits: tuple[float, float, float, float] | None = None,
        max_histogram_length: int = 200,
        show_automap: bool = False,
        skip_frames: int = 1,
        async_mode: bool = False,
        record_to: str | None = None,
        render_mode: str | None = None,
        *,
        spec: DoomSpec | None = None,
        options: GameOptions | None = None,
        network: NetworkRole | None = None,
        num_bots: int = 0,
        tic_barrier: threading.Barrier | None = None,
        port_picker: Callable[[int], int] | None = None,
    ) -> None:
        """Either Sample Factory 2's way, ``action_space`` and ``config_file`` (a shipped .cfg name or a path), or a
        ``spec`` (a :class:`DoomSpec`, also accepted as the first argument). ``skip_frames``: tics per step;
        ``coord_limits`` (x_min, y_min, x_max, y_max): count visited places in a ``max_histogram_length``-square grid
        (``position_histogram``); ``record_to``: a folder (or ``.lmp`` path) for a demo of every episode."""
        if isinstance(action_space, DoomSpec):
            spec, action_space = action_space, None
        spec = spec_for(spec, action_space, config_file)
        if skip_frames < 1:
            raise ValueError(f"--env_frameskip={skip_frames} must be >= 1")
        self.spec_ = spec
        self.frameskip = skip_frames
        self.options = options or GameOptions()
        self.options.show_automap = self.options.show_automap or show_automap
        self.options.async_mode = self.options.async_mode or async_mode
        self.network = network
        self.num_bots = num_bots
        self.render_mode = render_mode
        self.tic_barrier = tic_barrier
        self.port_picker = port_picker  # attempt -> free port, for a player that hosts its own (bot) game
        self.record_to = record_to
        self.coord_limits = coord_limits
        self.position_histogram = np.zeros((max_histogram_length, max_histogram_length), dtype=np.int64)
        self.episodes_started = 0
        self.game: Any = None
        self._automap: np.ndarray | None = None
        self._finalizer: weakref.finalize | None = None
        self._set_up_spaces()

    # ---- spaces --------------------------------------------------------------------------------------------------

    def rebuild_spaces(self) -> None:
        """Read the spaces again after an option that changes them (resolution) was set; before the first reset."""
        self._set_up_spaces()

    def _set_up_spaces(self) -> None:
        """Read buttons, variables and screen size from a configured (not started) game."""
        probe = self._configure()
        self.variable_names = [str(v).split(".")[-1] for v in probe.get_available_game_variables()]
        self.variable_index = {name: i for i, name in enumerate(self.variable_names)}
        self.game_variables = np.zeros(len(self.variable_names), dtype=np.float64)
        num_buttons = len(probe.get_available_buttons())
        self.action_space = make_action_space(self.spec_.action_space, num_buttons)
        self.button_mapper = ButtonMapper(self.action_space, num_buttons)
        shape = (probe.get_screen_height(), probe.get_screen_width(), 3)
        self.observation_space = gym.spaces.Box(0, 255, shape=shape, dtype=np.uint8)
        self._screen = np.zeros(shape, dtype=np.uint8)

    def _configure(self) -> Any:
        game = configure_game(self.spec_, self.options, self.network)
        if self.spec_.measurements:
            gv = vizdoom().GameVariable
            game.set_available_game_variables([getattr(gv, name) for name in DEATHMATCH_VARIABLES])
        return game

    # ---- start-up and shutdown ---------------------------------------------------------------------------------

    def start(self, attempts: int = START_ATTEMPTS) -> None:
        """Start the engine, retrying with a fresh game object (a start-up can fail on a busy machine)."""
        for attempt in range(1, attempts + 1):
            try:
                if self.port_picker is not None and self.network is not None:
                    self.network.port = self.port_picker(attempt - 1)
                self.start_once()
                return
            except Exception as exc:
                name = self.spec_.name
                log.warning("ViZDoom start-up of %s failed (attempt %d/%d): %r", name, attempt, attempts, exc)
                self.close()
                if attempt == attempts:
                    raise EnvCriticalError(f"could not start ViZDoom for {self.spec_.name}: {exc!r}") from exc
                time.sleep(0.5 * attempt)

    def start_once(self) -> None:
        """One start-up attempt; a networked player blocks here until the whole match has joined."""
        game = self._configure()
        self.game = game
        prepare_engine_start()
        game.init()
        register_game(game)
        self._finalizer = weakref.finalize(self, release_game, game)
        if self.num_bots and (self.network is None or self.network.host):
            add_bots(game, self.num_bots)
        if self.record_to:
            game.new_episode(self.demo_path())  # the first episode starts with init(), unrecorded: restart it

    def demo_path(self) -> str:
        """Where the demo of the episode that starts now goes (``record_to`` a folder, or an ``.lmp`` file name)."""
        if self.record_to.endswith(".lmp"):
            stem = self.record_to[: -len(".lmp")]
            return f"{stem}_{self.episodes_started:04d}.lmp" if self.episodes_started else self.record_to
        os.makedirs(self.record_to, exist_ok=True)
        return os.path.join(self.record_to, f"{self.spec_.name}_ep{self.episodes_started:04d}.lmp")

    def close(self) -> None:
        """Close the engine; safe to call repeatedly and on a half-started game."""
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self.game is not None:
            game, self.game = self.game, None
            release_game(game)

    # ---- episodes ------------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None and self.spec_.fixed_seed is None:
            self.options.seed = seed
            if self.game is not None:
                self.game.set_seed(int(seed) % (2**31))
        if self.game is None:
            self.start()
        else:
            self._new_episode()
        self.position_histogram[:] = 0
        self._read_state()
        return self._screen, {"num_frames": 0}

    def _new_episode(self) -> None:
        if self.spec_.fixed_seed is not None:
            self.game.set_seed(self.spec_.fixed_seed)
        self.episodes_started += 1
        self.game.new_episode(self.demo_path() if self.record_to else "")
        if self.num_bots and (self.network is None or self.network.host):
            add_bots(self.game, self.num_bots)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.options.spectator:
            return self._step_spectator()
        buttons = self.button_mapper(action)
        if self.tic_barrier is None:
            reward = self.game.make_action(buttons, self.frameskip)
        else:
            reward = self._step_tic_by_tic(buttons)
        finished = self.game.is_episode_finished()
        if not finished and self.game.is_player_dead() and self.tic_barrier is None:
            self.game.respawn_player()  # deathmatch: a death is not the end of the episode
        self._read_state()
        timed_out = finished and (self.spec_.deathmatch or self.game.is_episode_timeout_reached())
        return self._screen, float(reward), finished and not timed_out, timed_out, {"num_frames": self.frameskip}

    def _step_spectator(self) -> tuple[np.ndarray, float, bool, bool, dict]:
        """A human plays through the window: the game advances on its own and reports what they pressed."""
        self.game.advance_action(self.frameskip)
        reward = self.game.get_last_reward()
        human_action = list(self.game.get_last_action())
        finished = self.game.is_episode_finished()
        self._read_state()
        timed_out = finished and self.game.is_episode_timeout_reached()
        info = {"num_frames": self.frameskip, "human_action": human_action}
        return self._screen, float(reward), finished and not timed_out, timed_out, info

    def _step_tic_by_tic(self, buttons: list[float]) -> float:
        """Lock-step play of a self-play match; the turn delta is applied on the first tic only, as in make_action."""
        reward = 0.0
        held = self.button_mapper.without_deltas(buttons)
        for tic in range(self.frameskip):
            self.game.set_action(buttons if tic == 0 else held)
            self.game.advance_action(1, tic == self.frameskip - 1)
            reward += self.game.get_last_reward()
            self.tic_barrier.wait(TIC_BARRIER_TIMEOUT_S)
            if self.game.is_episode_finished():
                break
        return reward

    def _read_state(self) -> None:
        """Keep the last screen and variables: after the final tic ViZDoom has no state to return."""
        state = self.game.get_state()
        if state is None:
            return
        self._screen = state.screen_buffer
        if self.options.show_automap and state.automap_buffer is not None:
            self._automap = state.automap_buffer
        if self.coord_limits is not None:
            self._count_position()
        if state.game_variables is not None and len(state.game_variables):
            self.game_variables = np.asarray(state.game_variables, dtype=np.float64)

    def _count_position(self) -> None:
        gv = vizdoom().GameVariable
        x, y = self.game.get_game_variable(gv.POSITION_X), self.game.get_game_variable(gv.POSITION_Y)
        x_min, y_min, x_max, y_max = self.coord_limits
        bins = self.position_histogram.shape[0]
        col = int(np.clip((x - x_min) / max(x_max - x_min, 1e-9) * bins, 0, bins - 1))
        row = int(np.clip((y - y_min) / max(y_max - y_min, 1e-9) * bins, 0, bins - 1))
        self.position_histogram[row, col] += 1

    def variable(self, name: str) -> float:
        """Latest value of a registered game variable."""
        return float(self.game_variables[self.variable_index[name]])

    def render(self) -> np.ndarray | None:
        """``rgb_array``: the full-resolution screen; ``human``: ViZDoom draws its own window during ``step()``."""
        if self.render_mode == "rgb_array":
            return (self._automap if self._automap is not None else self._screen).copy()
        return None
