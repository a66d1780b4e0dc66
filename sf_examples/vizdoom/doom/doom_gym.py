"""One ViZDoom player as a Gymnasium env: lazy start with retries, frameskip, headless by default, clean close.

Observations are the raw RGB screen (HWC, uint8); resizing, CHW layout, measurements and reward shaping are
wrappers (``wrappers.py``). The engine starts on the first ``reset()``, not in the constructor, so the spaces can
be read (e.g. by the runner) without paying for a game start.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import EnvCriticalError
from sample_factory.utils.utils import log
from sf_examples.vizdoom.doom.action_space import ButtonMapper, make_action_space
from sf_examples.vizdoom.doom.game_setup import GameOptions, NetworkRole, add_bots, configure_game, vizdoom
from sf_examples.vizdoom.doom.game_variables import DEATHMATCH_VARIABLES
from sf_examples.vizdoom.doom.lifecycle import prepare_engine_start, register_game, release_game
from sf_examples.vizdoom.doom.scenarios import DoomSpec

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
        spec: DoomSpec,
        frameskip: int = 4,
        options: GameOptions | None = None,
        network: NetworkRole | None = None,
        num_bots: int = 0,
        render_mode: str | None = None,
        tic_barrier: threading.Barrier | None = None,
        port_picker: Callable[[int], int] | None = None,
    ) -> None:
        if frameskip < 1:
            raise ValueError(f"--env_frameskip={frameskip} must be >= 1")
        self.spec_ = spec
        self.frameskip = frameskip
        self.options = options or GameOptions()
        self.network = network
        self.num_bots = num_bots
        self.render_mode = render_mode
        self.tic_barrier = tic_barrier
        self.port_picker = port_picker  # attempt -> free port, for a player that hosts its own (bot) game
        self.game: Any = None
        self._finalizer: weakref.finalize | None = None
        self._set_up_spaces()

    # ---- spaces --------------------------------------------------------------------------------------------------

    def _set_up_spaces(self) -> None:
        """Read buttons, variables and screen size from a configured (not started) game."""
        probe = self._configure()
        self.variable_names = [str(v).split(".")[-1] for v in probe.get_available_game_variables()]
        self.variable_index = {name: i for i, name in enumerate(self.variable_names)}
        self.game_variables = np.zeros(len(self.variable_names), dtype=np.float64)
        num_buttons = len(probe.get_available_buttons())
        self.action_space = make_action_space(self.spec_.action_kind, num_buttons)
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
        self._read_state()
        return self._screen, {"num_frames": 0}

    def _new_episode(self) -> None:
        if self.spec_.fixed_seed is not None:
            self.game.set_seed(self.spec_.fixed_seed)
        self.game.new_episode()
        if self.num_bots and (self.network is None or self.network.host):
            add_bots(self.game, self.num_bots)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
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
        if state.game_variables is not None and len(state.game_variables):
            self.game_variables = np.asarray(state.game_variables, dtype=np.float64)

    def variable(self, name: str) -> float:
        """Latest value of a registered game variable."""
        return float(self.game_variables[self.variable_index[name]])

    def render(self) -> np.ndarray | None:
        """``rgb_array``: the full-resolution screen; ``human``: ViZDoom draws its own window during ``step()``."""
        if self.render_mode == "rgb_array":
            return self._screen.copy()
        return None
