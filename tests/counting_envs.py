"""Tiny deterministic envs for sampler tests: every output says which env, agent and step produced it."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

BOX_OBS = spaces.Box(-1e6, 1e6, (2,), dtype=np.float32)
DICT_OBS = spaces.Dict({"pos": spaces.Box(-1e6, 1e6, (2,), dtype=np.float32), "level": spaces.Discrete(100)})


class CountingEnv(gym.Env):
    """Single agent. Observation ``[t, tag]`` (``t`` = steps into the episode), reward ``t + 10 * tag``.

    The episode ends after ``length`` steps, by termination or (``truncate=True``) by truncation; its last info
    carries ``episode_extra_stats`` and ``true_objective``. ``step_info`` is merged into every step's info (e.g.
    ``is_active`` or ``num_frames``). ``dict_obs=True`` returns ``{"pos": [t, tag], "level": tag}``.
    """

    def __init__(
        self,
        tag: int = 0,
        length: int = 3,
        truncate: bool = False,
        step_info: dict | None = None,
        dict_obs: bool = False,
        action_space: gym.Space | None = None,
    ) -> None:
        self.tag, self.length, self.truncate = tag, length, truncate
        self.step_info = step_info or {}
        self.dict_obs = dict_obs
        self.observation_space = DICT_OBS if dict_obs else BOX_OBS
        self.action_space = action_space or spaces.Discrete(3)
        self.t = 0
        self.seeds: list[int | None] = []
        self.actions: list[Any] = []
        self.closed = False

    def _obs(self) -> Any:
        pos = np.array([self.t, self.tag], dtype=np.float32)
        return {"pos": pos, "level": self.tag} if self.dict_obs else pos

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.seeds.append(seed)
        self.t = 0
        return self._obs(), {"reset": True}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.actions.append(action)
        self.t += 1
        ended = self.t >= self.length
        info = dict(self.step_info)
        if ended:
            info.update(episode_extra_stats={"tag": float(self.tag)}, true_objective=100.0 + self.tag)
        reward = float(self.t + 10 * self.tag)
        return self._obs(), reward, ended and not self.truncate, ended and self.truncate, info

    def close(self) -> None:
        self.closed = True


class TwoAgentEnv(gym.Env):
    """Two agents, per-agent lists; agent ``a`` gets observation ``[t, 10 * tag + a]`` and reward ``a + 1``.

    Both agents' episodes end together after ``length`` steps and the env resets itself (multi-agent protocol);
    agent 1 is inactive on odd steps (``is_active=False``).
    """

    num_agents = 2
    is_multiagent = True

    def __init__(self, tag: int = 0, length: int = 4) -> None:
        self.tag, self.length = tag, length
        self.observation_space = BOX_OBS
        self.action_space = spaces.Discrete(3)
        self.t = 0
        self.actions: list[Any] = []

    def _obs(self) -> list[np.ndarray]:
        return [np.array([self.t, 10 * self.tag + agent], dtype=np.float32) for agent in range(2)]

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[list, list[dict]]:
        self.t = 0
        return self._obs(), [{}, {}]

    def step(self, actions: list) -> tuple[list, list[float], list[bool], list[bool], list[dict]]:
        self.actions.append(list(actions))
        self.t += 1
        ended = self.t >= self.length
        infos = [{"is_active": True}, {"is_active": self.t % 2 == 0}]
        if ended:
            self.t = 0
        return self._obs(), [1.0, 2.0], [ended, ended], [False, False], infos

    def close(self) -> None:
        pass
