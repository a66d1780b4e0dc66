"""Self-play: several agents in one ViZDoom deathmatch, exposed as one multi-agent env.

Player 0 hosts the match on ``127.0.0.1:<port>``, the others join it; each player is a full single-player wrapper
stack around its own ``VizdoomEnv``. All players step in parallel threads (the engines are separate processes
and ViZDoom releases the GIL while it waits for them) and advance tic by tic in lock-step through a shared barrier.
The match starts, restarts episodes and shuts down as a whole: a networked game cannot continue without any of
its players.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import gymnasium as gym

from sample_factory.envs.env_utils import EnvCriticalError, RewardShapingInterface, find_wrapper_interface
from sample_factory.utils.utils import log
from sf_examples.vizdoom.doom.doom_gym import START_ATTEMPTS, VizdoomEnv
from sf_examples.vizdoom.doom.lifecycle import engine_processes

MATCH_START_TIMEOUT_S = 90.0  # the host waits up to 60 s for clients before ViZDoom itself gives up
STEP_TIMEOUT_S = 60.0
ENGINE_LAUNCH_TIMEOUT_S = 10.0  # then the next player starts anyway; the match start-up timeout still applies


class VizdoomMultiAgentEnv(gym.Env, RewardShapingInterface):
    """``num_agents`` players of one match; lists in, lists out, whole-match auto-reset at the end of an episode."""

    metadata = VizdoomEnv.metadata

    def __init__(
        self, players: Sequence[gym.Env], tic_barrier: threading.Barrier, port_picker: Callable[[int], int]
    ) -> None:
        self.players = list(players)
        self.cores: list[VizdoomEnv] = [player.unwrapped for player in self.players]
        self.num_agents = len(self.players)
        self.is_multiagent = True
        self.tic_barrier = tic_barrier
        self.port_picker = port_picker
        self.observation_space = self.players[0].observation_space
        self.action_space = self.players[0].action_space
        self.render_mode = self.cores[0].render_mode
        self._pool: ThreadPoolExecutor | None = None
        self._started = False

    # ---- threads -------------------------------------------------------------------------------------------------

    def _submit(self, call: Callable[[], Any]) -> Future:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.num_agents, thread_name_prefix="doom_player")
        return self._pool.submit(call)

    def _run_all(self, calls: Sequence[Callable[[], Any]], timeout: float, what: str) -> list[Any]:
        """Run one call per player in parallel; any failure or hang aborts the barrier and fails the whole match."""
        return self._collect([self._submit(call) for call in calls], timeout, what)

    def _collect(self, futures: Sequence[Future], timeout: float, what: str) -> list[Any]:
        """The players' results; any failure or hang aborts the barrier and fails the whole match."""
        try:
            return [future.result(timeout=timeout) for future in futures]
        except FutureTimeout as exc:
            self.tic_barrier.abort()
            raise EnvCriticalError(f"ViZDoom match: {what} did not finish in {timeout:.0f}s") from exc
        except Exception:
            self.tic_barrier.abort()
            for future in futures:  # let the other players' calls end (the aborted barrier releases them)
                try:
                    future.exception(timeout=timeout)
                except FutureTimeout:
                    log.warning("a ViZDoom player thread is still busy after a failure in its match")
            raise

    # ---- start-up ------------------------------------------------------------------------------------------------

    def _start_match(self) -> None:
        """Host and clients must init concurrently (the host blocks until everyone joined); retried on a new port."""
        for attempt in range(START_ATTEMPTS):
            port = self.port_picker(attempt)
            for core in self.cores:
                core.network.port = port
            self.tic_barrier.reset()
            try:
                self._collect(self._start_players(), MATCH_START_TIMEOUT_S, "start-up")
                self._started = True
                return
            except Exception as exc:
                log.warning("ViZDoom match start-up on port %d failed (attempt %d): %r", port, attempt + 1, exc)
                self._close_games()
        raise EnvCriticalError(f"could not start a {self.num_agents}-player ViZDoom match")

    def _start_players(self) -> list[Future]:
        """Begin each player's ``init()`` once the previous player's engine process runs.

        The host's ``init()`` returns only when every client joined, so the calls overlap; but two threads inside
        ViZDoom's ``init()`` while it launches engines occasionally crash the whole process (SIGSEGV, seen about
        once in 15 matches on a busy 2-core machine). A launched engine leaves its player's thread waiting for the
        match, which is safe to overlap with the next launch.
        """
        futures = []
        for i, core in enumerate(self.cores):
            before = engine_processes()
            futures.append(self._submit(core.start_once))
            if i + 1 < len(self.cores):
                self._wait_for_new_engine(before, futures[-1])
        return futures

    @staticmethod
    def _wait_for_new_engine(before: set[int], future: Future) -> None:
        """Until an engine not in ``before`` runs, or the player's start-up ended (failed) or timed out."""
        deadline = time.monotonic() + ENGINE_LAUNCH_TIMEOUT_S
        while time.monotonic() < deadline and not future.done():
            if engine_processes() - before:
                return
            time.sleep(0.01)

    # ---- episodes ------------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[list[Any], list[dict]]:
        if not self._started:
            self._start_match()
        # only the host seeds the match: the netgame shares its random state with the clients
        seeds = [seed] + [None] * (self.num_agents - 1)
        calls = [lambda p=player, s=s: p.reset(seed=s) for player, s in zip(self.players, seeds, strict=True)]
        results = self._run_all(calls, STEP_TIMEOUT_S, "reset")
        return [r[0] for r in results], [r[1] for r in results]

    def step(self, actions: Sequence[Any]) -> tuple[list, list, list, list, list]:
        calls = [lambda p=player, a=a: p.step(a) for player, a in zip(self.players, actions, strict=True)]
        results = self._run_all(calls, STEP_TIMEOUT_S, "step")
        obs, rewards, terminated, truncated, infos = (list(column) for column in zip(*results, strict=True))
        if any(terminated) or any(truncated):
            # the match ends for everyone at once; a player that did not see it is cut off (truncated) with the rest
            truncated = [tr or not te for te, tr in zip(terminated, truncated, strict=True)]
            obs, _ = self.reset()
        return obs, rewards, terminated, truncated, infos

    # ---- interfaces ----------------------------------------------------------------------------------------------

    def _shaping(self, agent: int) -> RewardShapingInterface | None:
        return find_wrapper_interface(self.players[agent], RewardShapingInterface)

    def get_default_reward_shaping(self) -> dict[str, float] | None:
        shaping = self._shaping(0)
        return shaping.get_default_reward_shaping() if shaping is not None else None

    def set_reward_shaping(self, reward_shaping: dict[str, Any], agent_idx: int | slice) -> None:
        agents = range(self.num_agents)[agent_idx] if isinstance(agent_idx, slice) else [agent_idx]
        for agent in agents:
            shaping = self._shaping(agent)
            if shaping is not None:
                shaping.set_reward_shaping(reward_shaping, agent)

    def render(self) -> Any:
        """Player 0's view."""
        return self.players[0].render()

    # ---- shutdown ------------------------------------------------------------------------------------------------

    def _close_games(self) -> None:
        self.tic_barrier.abort()  # wake any player thread waiting for a tic that will never come
        for core in self.cores:
            core.close()
        self._started = False

    def close(self) -> None:
        """Stop every engine of the match, then the player threads (which the closed engines release)."""
        self._close_games()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
