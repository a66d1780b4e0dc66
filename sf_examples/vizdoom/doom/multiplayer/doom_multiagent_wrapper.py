"""The players of one match as one multi-agent env, and the plumbing to run a player in its own thread.

:class:`MultiAgentEnv` is the library's self-play env (``VizdoomMultiAgentEnv``: player threads stepping in
lock-step) built from a ``make_env_func(player_id=i)``. :class:`MultiAgentEnvWorker` runs one player behind a task
queue, for code that drives players one by one.
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable
from enum import Enum
from typing import Any

import gymnasium as gym

from sample_factory.utils.decorators import retrying
from sf_examples.vizdoom.doom.lifecycle import pick_port
from sf_examples.vizdoom.doom.multiplayer import VizdoomMultiAgentEnv
from sf_examples.vizdoom.doom.multiplayer.doom_multiagent import DEFAULT_UDP_PORT

WORKER_TIMEOUT_S = 120.0


class TaskType(Enum):
    """What a :class:`MultiAgentEnvWorker` is asked to do."""

    INIT = "init"
    RESET = "reset"
    STEP = "step"
    INFO = "info"
    TERMINATE = "terminate"


def safe_get(q: queue.Queue, timeout: float = WORKER_TIMEOUT_S, msg: str = "queue get timed out") -> Any:
    """``q.get`` that raises ``TimeoutError(msg)`` instead of waiting forever for a player that hung."""
    try:
        return q.get(timeout=timeout)
    except queue.Empty as exc:
        raise TimeoutError(f"{msg} (no answer in {timeout:.0f}s)") from exc


def udp_port_num(env_config: Any) -> int:
    """The port of a match: ``DEFAULT_UDP_PORT`` plus the env's unique id, so the matches of a run do not collide."""
    env_id = getattr(env_config, "env_id", 0) if env_config is not None else 0
    return DEFAULT_UDP_PORT + max(int(env_id), 0)


def retry_doom(
    exception_class: type[BaseException] = Exception, num_attempts: int = 3, sleep_time: float = 1.0,
    should_reset: bool = False,
) -> Callable[[Callable], Callable]:  # fmt: skip
    """Decorator: call again after ``exception_class`` (a busy machine can fail an engine start), up to
    ``num_attempts`` times, ``sleep_time`` seconds apart; ``should_reset`` resets the method's object in between."""

    def reset_owner(args: tuple) -> None:
        if should_reset and args and hasattr(args[0], "reset"):
            args[0].reset()

    return retrying(exception_class, num_attempts, sleep_time, between=reset_owner)


def init_multiplayer_env(
    make_env_func: Callable[..., gym.Env], player_id: int, env_config: Any, init_info: dict | None = None
) -> gym.Env:
    """Player ``player_id``'s env, made with ``make_env_func(player_id=...)``; ``init_info["port"]`` sets the port
    of the match (all players must share it). The engine starts at the first reset."""
    del env_config  # make_env_func carries it
    env = make_env_func(player_id=player_id)
    port = (init_info or {}).get("port")
    network = getattr(env.unwrapped, "network", None)
    if port is not None and network is not None:
        network.port = int(port)
    return env


class MultiAgentEnvWorker:
    """One player's env in a thread of its own, driven through a task queue (``init``, ``reset``, ``step``,
    ``close``); every call waits for its answer. Players of a match must share this process (their engines advance
    in lock-step), so ``use_multiprocessing=True`` is refused."""

    def __init__(
        self, player_id: int, make_env_func: Callable[..., gym.Env], env_config: Any,
        use_multiprocessing: bool = False, reset_on_init: bool = True,
    ) -> None:  # fmt: skip
        if use_multiprocessing:
            raise ValueError("the players of a ViZDoom match run in threads of one process: use_multiprocessing=False")
        self.player_id, self.make_env_func, self.env_config = player_id, make_env_func, env_config
        self.reset_on_init = reset_on_init
        self.env: gym.Env | None = None
        self.tasks: queue.Queue = queue.Queue()
        self.results: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, name=f"doom_player_{player_id}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            task, data = self.tasks.get()
            try:
                result = self._do(task, data)
            except Exception as exc:  # handed to the caller, which raises it
                result = exc
            self.results.put(result)
            if task is TaskType.TERMINATE:
                return

    def _do(self, task: TaskType, data: Any) -> Any:
        if task is TaskType.INIT:
            self.env = init_multiplayer_env(self.make_env_func, self.player_id, self.env_config, data)
            return self.env.reset() if self.reset_on_init else None
        if task is TaskType.RESET:
            return self.env.reset(**(data or {}))
        if task is TaskType.STEP:
            return self.env.step(data)
        if task is TaskType.INFO:
            return {"observation_space": self.env.observation_space, "action_space": self.env.action_space}
        if self.env is not None:
            self.env.close()
        return None

    def _call(self, task: TaskType, data: Any = None) -> Any:
        self.tasks.put((task, data))
        result = safe_get(self.results, msg=f"player {self.player_id}: {task.value}")
        if isinstance(result, Exception):
            raise result
        return result

    def init(self, init_info: dict | None = None) -> Any:
        return self._call(TaskType.INIT, init_info)

    def reset(self, **kwargs: Any) -> Any:
        return self._call(TaskType.RESET, kwargs)

    def step(self, action: Any) -> Any:
        return self._call(TaskType.STEP, action)

    def info(self) -> dict:
        return self._call(TaskType.INFO)

    def close(self) -> None:
        """Close the env and end the thread (joined)."""
        if self.thread.is_alive():
            self._call(TaskType.TERMINATE)
            self.thread.join(timeout=WORKER_TIMEOUT_S)


class MultiAgentEnv(VizdoomMultiAgentEnv):
    """``num_agents`` players, made by ``make_env_func(player_id=i)`` (networked players: player 0 hosts), as one
    multi-agent env whose players advance tic by tic together; ``skip_frames`` tics per step when given."""

    def __init__(
        self, num_agents: int, make_env_func: Callable[..., gym.Env], env_config: Any, skip_frames: int | None = None,
        render_mode: str | None = None,
    ) -> None:  # fmt: skip
        barrier = threading.Barrier(num_agents)
        players = []
        for player_id in range(num_agents):
            player = make_env_func(player_id=player_id)
            core = player.unwrapped
            core.tic_barrier, core.port_picker = barrier, None
            if skip_frames is not None:
                core.frameskip = skip_frames
            if player_id != 0:
                core.render_mode = None
            players.append(player)
        super().__init__(players, barrier, functools.partial(pick_port, udp_port_num(env_config), 0))
        self.render_mode = render_mode if render_mode is not None else self.render_mode
