"""PettingZoo parallel-API envs as multi-agent envs of this library (optional: ``pip install pettingzoo``).

PettingZoo's parallel API keys everything by agent name and removes an agent from ``env.agents`` once it is done;
the sampler wants a fixed number of agent slots with lists in slot order. :class:`PettingZooParallelEnv` maps one to
the other: slot ``i`` is ``possible_agents[i]``; an agent that is not playing (finished early, or not spawned yet)
gets a zero observation, a zero reward and ``info["is_active"] = False``, so its steps are not trained on. When no
agent is left the underlying env is reset and every slot gets the first observation of its next episode, as the
multi-agent protocol asks. PettingZoo itself is imported by the caller that builds the env, not here.

PettingZoo's board games give dict observations ``{"observation": board, "action_mask": legal moves}``; the board
is renamed to ``obs`` (:func:`normalize_observation_space`, :func:`normalize_observation`), the key models read,
and ``action_mask`` keeps the name under which the library masks illegal actions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

PETTINGZOO_OBS_KEY = "observation"  # PettingZoo's name for the board in dict observations
OBS_KEY = "obs"  # the name this library's models read


@dataclass(frozen=True)
class ObsTransform:
    """Turns one agent's raw observation into what the model sees (e.g. a resized CHW image) and its space."""

    space: gym.Space
    fn: Callable[[Any], Any]


def all_equal(l_: Sequence[Any]) -> bool:
    """True when every item equals the first (an empty sequence counts as equal), e.g. the spaces of all agents."""
    return all(item == l_[0] for item in l_[1:]) if len(l_) else True


def normalize_observation_space(obs_space: gym.Space) -> gym.Space:
    """A dict space with PettingZoo's ``observation`` entry gets it under ``obs``; other entries and spaces stay."""
    if isinstance(obs_space, gym.spaces.Dict) and PETTINGZOO_OBS_KEY in obs_space.spaces:
        return gym.spaces.Dict({_model_key(key): space for key, space in obs_space.spaces.items()})
    return obs_space


def normalize_observation(obs: Any) -> Any:
    """The observation to match :func:`normalize_observation_space`: ``observation`` renamed to ``obs`` in a dict."""
    if isinstance(obs, dict) and PETTINGZOO_OBS_KEY in obs:
        return {_model_key(key): value for key, value in obs.items()}
    return obs


def normalize_info(info: dict | None, agent: Any) -> dict:
    """``agent``'s own info dict out of PettingZoo's per-agent ``info`` mapping: a copy, empty when it has none.

    The copy matters: the sampler adds keys to each agent's info, which must not leak into the env's dicts.
    """
    entry = info.get(agent) if info else None
    return dict(entry) if entry else {}


def _model_key(key: str) -> str:
    return OBS_KEY if key == PETTINGZOO_OBS_KEY else key


def default_transform(space: gym.Space) -> ObsTransform | None:
    """The conversion an agent's observations get unless the caller passes its own: see :func:`float32_box` and
    :func:`normalize_observation_space`; None when the observations are used as they are."""
    if normalize_observation_space(space) is not space:
        return ObsTransform(normalize_observation_space(space), normalize_observation)
    return float32_box(space)


def float32_box(space: gym.spaces.Space) -> ObsTransform | None:
    """float64 Box observations as float32 (the dtype of the sampler's buffers); None if nothing to convert."""
    if isinstance(space, gym.spaces.Box) and space.dtype == np.float64:
        box = gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), dtype=np.float32)
        return ObsTransform(box, lambda obs: np.asarray(obs, dtype=np.float32))
    if isinstance(space, gym.spaces.Discrete):
        return one_hot(space)
    return None


def one_hot(space: gym.spaces.Discrete) -> ObsTransform:
    """Discrete observations as one-hot float32 vectors: the library's encoders take Box inputs."""
    eye = np.eye(space.n, dtype=np.float32)
    box = gym.spaces.Box(0.0, 1.0, shape=(int(space.n),), dtype=np.float32)
    return ObsTransform(box, lambda obs: eye[int(obs) - int(space.start)])


class PettingZooParallelEnv(gym.Env):
    """A PettingZoo ``ParallelEnv`` presented as a multi-agent env with ``num_agents = len(possible_agents)``.

    Agents may have different observation and action spaces (``observation_spaces`` / ``action_spaces`` list them
    per agent index, in ``possible_agents`` order): the trainer then gives each kind of agent a policy of its own
    (docs/multi_agent.md). ``observation_space`` / ``action_space`` are the first agent's. ``obs_transform``
    replaces the default conversion (float64 to float32, Discrete to one-hot, ``observation`` renamed to ``obs``)
    of every agent's observation.
    """

    def __init__(self, env: Any, obs_transform: ObsTransform | None = None) -> None:
        self.env = env
        self.agent_names: list = list(env.possible_agents)
        if not self.agent_names:
            raise ValueError(f"PettingZoo env {_env_name(env)} has no possible_agents")
        raw_spaces = [env.observation_space(agent) for agent in self.agent_names]
        self.obs_transforms = [obs_transform or default_transform(space) for space in raw_spaces]
        self.observation_spaces = [
            transform.space if transform else space
            for transform, space in zip(self.obs_transforms, raw_spaces, strict=True)
        ]
        self.action_spaces = [env.action_space(agent) for agent in self.agent_names]
        self.observation_space, self.action_space = self.observation_spaces[0], self.action_spaces[0]
        self.num_agents = len(self.agent_names)
        self.is_multiagent = True
        self.render_mode = getattr(env, "render_mode", None)
        self.metadata = dict(getattr(env, "metadata", {}) or {})
        self._zero_obs = [_zeros(space) for space in self.observation_spaces]
        self._inactive_info = {"is_active": False}

    def _obs(self, index: int, raw: Any) -> np.ndarray:
        transform = self.obs_transforms[index]
        return transform.fn(raw) if transform else raw

    def _obs_list(self, obs_by_agent: dict) -> list[np.ndarray]:
        return [
            self._obs(i, obs_by_agent[a]) if a in obs_by_agent else self._zero_obs[i]
            for i, a in enumerate(self.agent_names)
        ]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[list[np.ndarray], list[dict]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        live = set(self.env.agents)
        return self._obs_list(obs), [self._info(a, infos, a in live) for a in self.agent_names]

    def _info(self, agent: Any, infos: dict, active: bool) -> dict:
        return normalize_info(infos, agent) if active else self._inactive_info

    def step(self, actions: Sequence) -> tuple[list[np.ndarray], list[float], list[bool], list[bool], list[dict]]:
        """Act for the agents still playing; when none is left, reset and return every agent's first observation."""
        live = set(self.env.agents)
        env_actions = {a: self._env_action(i, actions[i]) for i, a in enumerate(self.agent_names) if a in live}
        obs, rewards, terminations, truncations, infos = self.env.step(env_actions)
        reward_list = [float(rewards.get(a, 0.0)) if a in live else 0.0 for a in self.agent_names]
        terminated = [a in live and bool(terminations.get(a, False)) for a in self.agent_names]
        truncated = [a in live and bool(truncations.get(a, False)) and not terminated[i]
                     for i, a in enumerate(self.agent_names)]  # fmt: skip
        info_list = [self._info(a, infos, a in live) for a in self.agent_names]
        if not self.env.agents:
            obs, _ = self.env.reset()
        return self._obs_list(obs), reward_list, terminated, truncated, info_list

    def _env_action(self, index: int, action: Any) -> Any:
        space = self.action_spaces[index]
        if isinstance(space, gym.spaces.Discrete):
            return int(np.asarray(action).reshape(-1)[0]) if np.ndim(action) else int(action)
        if isinstance(space, gym.spaces.Box):  # Gaussian samples fall outside the bounds
            return np.clip(np.asarray(action, dtype=space.dtype), space.low, space.high)
        return action

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def _zeros(space: gym.Space) -> Any:
    """What an agent that is not playing sees: zeros of its space (one array per entry of a dict space)."""
    if isinstance(space, gym.spaces.Dict):
        return {key: _zeros(sub) for key, sub in space.spaces.items()}
    return np.zeros(space.shape, dtype=space.dtype)


def _env_name(env: Any) -> str:
    return repr((getattr(env, "metadata", None) or {}).get("name", type(env).__name__))
