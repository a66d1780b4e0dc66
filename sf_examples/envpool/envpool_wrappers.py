"""One EnvPool instance (``--env_agents`` envs stepped by C++ threads) as a natively vectorised env of this library.

The batched sampler wants a multi-agent env whose agents are the envs of the pool: ``num_agents = num_envs``,
actions in as one array ``[num_envs, ...]``, stacked arrays out, and an env whose episode ended already showing
the first observation of its next episode. EnvPool resets a finished env only on the *next* ``step`` call (which
then ignores that env's action), so :class:`EnvPoolBatchedEnv` resets the finished envs right away with
``reset(env_id=...)`` and writes their first observations into the rows of the step that ended them.

Episode scores are accumulated here from the raw rewards (``info["reward"]`` when EnvPool clips rewards for
training), and reported at episode end as ``info["episode"] = {"r", "l"}`` (read with
``--use_record_episode_statistics=True``) and as ``info["true_objective"]``; steps without a finished episode
return empty infos, the sampler's fast path.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np


def _in_env_order(values: np.ndarray, env_ids: np.ndarray | None) -> np.ndarray:
    """Per-row values of EnvPool's output rearranged so that index ``i`` is env ``i``."""
    if env_ids is None:
        return values
    ordered = np.empty_like(values)
    ordered[env_ids] = values
    return ordered


def float32_space(space: gym.spaces.Space) -> gym.spaces.Space:
    """EnvPool's MuJoCo observations are float64; the sampler's buffers are float32."""
    if isinstance(space, gym.spaces.Box) and space.dtype == np.float64:
        return gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), dtype=np.float32)
    return space


class EnvPoolBatchedEnv(gym.Env):
    """``pool``: a synchronous EnvPool gymnasium env (``batch_size == num_envs``); each of its envs is one agent."""

    is_multiagent = True

    def __init__(self, pool: Any, num_envs: int, render_mode: str | None = None) -> None:
        self.pool = pool
        self.num_agents = num_envs
        self.render_mode = render_mode
        self.observation_space = float32_space(pool.observation_space)
        self.action_space = pool.action_space
        self._obs = np.zeros((num_envs, *self.observation_space.shape), dtype=self.observation_space.dtype)
        self._ids = np.arange(num_envs, dtype=np.int32)
        self._episode_return = np.zeros(num_envs, dtype=np.float64)
        self._episode_len = np.zeros(num_envs, dtype=np.int64)
        self._infos: list[dict] = [{} for _ in range(num_envs)]
        self._reported: np.ndarray = np.zeros(0, dtype=np.int64)  # rows whose info holds last step's episode

    def _write_obs(self, obs: np.ndarray, info: dict, rows: np.ndarray | None = None) -> None:
        """Observations into their env's row; ``info["env_id"]`` says which env each row of EnvPool's output is."""
        env_ids = np.asarray(info.get("env_id", self._ids if rows is None else rows))
        self._obs[env_ids] = obs

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, list[dict]]:
        """Reset every env of the pool. EnvPool is seeded when it is made, so ``seed`` is not used here."""
        del seed, options
        obs, info = self.pool.reset()
        self._write_obs(obs, info)
        self._episode_return[:] = 0.0
        self._episode_len[:] = 0
        self._clear_reported()
        return self._obs, self._infos

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        obs, rewards, terminated, truncated, info = self.pool.step(self._pool_actions(actions), self._ids)
        self._write_obs(obs, info)
        self._clear_reported()
        order = self._row_order(info)
        rewards, terminated, truncated = (_in_env_order(np.asarray(v), order) for v in (rewards, terminated, truncated))
        raw_rewards = _in_env_order(np.asarray(info["reward"]), order) if "reward" in info else rewards
        self._episode_return += raw_rewards
        self._episode_len += 1
        done = np.logical_or(terminated, truncated)
        if done.any():
            self._finish_episodes(np.flatnonzero(done).astype(np.int32))
        return self._obs, rewards.astype(np.float32, copy=False), terminated, truncated, self._infos

    def _row_order(self, info: dict) -> np.ndarray | None:
        """The env of each output row, or None when rows are already in env order (EnvPool's usual sync output)."""
        env_ids = info.get("env_id")
        if env_ids is None or np.array_equal(env_ids, self._ids):
            return None
        return np.asarray(env_ids)

    def _pool_actions(self, actions: Any) -> np.ndarray:
        actions = np.asarray(actions)
        if isinstance(self.action_space, gym.spaces.Box):  # Gaussian samples fall outside the bounds
            return np.clip(actions, self.action_space.low, self.action_space.high).astype(self.action_space.dtype)
        return actions.reshape(self.num_agents).astype(np.int32)

    def _finish_episodes(self, rows: np.ndarray) -> None:
        """Report the finished episodes and reset their envs now, so their rows show the next first observation."""
        for row in rows:
            score = float(self._episode_return[row])
            # true_objective: evaluation and best-checkpoint selection use the raw score too, not clipped sums
            self._infos[row] = {"episode": {"r": score, "l": int(self._episode_len[row])}, "true_objective": score}
        self._episode_return[rows] = 0.0
        self._episode_len[rows] = 0
        self._reported = rows
        obs, info = self.pool.reset(rows)
        self._write_obs(obs, info, rows)

    def _clear_reported(self) -> None:
        for row in self._reported:
            self._infos[row] = {}
        self._reported = np.zeros(0, dtype=np.int64)

    def render(self) -> np.ndarray | None:
        """Env 0's frame (EnvPool renders one env per call)."""
        if self.render_mode != "rgb_array":
            return None
        frames = self.pool.render()
        return None if frames is None else np.asarray(frames)[0]

    def close(self) -> None:
        self.pool.close()


def has_image_observations(observation_space: gym.spaces.Space) -> bool:
    """True for image observations (a 3-D Box: stacked frames), the ones that are kept as uint8 for conv nets."""
    return isinstance(observation_space, gym.spaces.Box) and len(observation_space.shape) == 3


class EnvPoolResetFixWrapper(gym.Wrapper):
    """Lets Gymnasium-style callers reset an EnvPool instance: ``reset(seed=..., options=...)`` is accepted
    (EnvPool is seeded when it is made, so both are dropped) and the result is always ``(obs, info)``."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)

    def reset(self, **kwargs: Any) -> tuple[Any, Any]:
        del kwargs
        result = self.env.reset()
        return result if isinstance(result, tuple) else (result, {})


class BatchedRecordEpisodeStatistics(gym.Wrapper):
    """Episode returns and lengths of every env of a batched env (arrays of ``num_envs`` out of ``step``).

    At the step that ends episodes, ``info["episode"]`` holds ``r`` and ``l`` arrays (zero for envs whose episode
    goes on) and ``info["_episode"]`` the mask of finished envs; the last ``deque_size`` finished episodes are kept
    in ``return_queue`` and ``length_queue``.
    """

    def __init__(self, env: Any, num_envs: int, deque_size: int = 100) -> None:
        super().__init__(env)
        self.num_envs = num_envs
        self.episode_returns = np.zeros(num_envs, dtype=np.float64)
        self.episode_lengths = np.zeros(num_envs, dtype=np.int64)
        self.return_queue: deque = deque(maxlen=deque_size)
        self.length_queue: deque = deque(maxlen=deque_size)

    def reset(self, **kwargs: Any) -> tuple[Any, Any]:
        self.episode_returns[:] = 0.0
        self.episode_lengths[:] = 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, Any]:
        obs, rewards, terminated, truncated, info = self.env.step(action)
        self.episode_returns += np.asarray(rewards, dtype=np.float64)
        self.episode_lengths += 1
        done = np.logical_or(terminated, truncated)
        if done.any():
            info = dict(info)
            info["episode"] = {
                "r": np.where(done, self.episode_returns, 0.0),
                "l": np.where(done, self.episode_lengths, 0),
            }
            info["_episode"] = done
            self.return_queue.extend(self.episode_returns[done].tolist())
            self.length_queue.extend(self.episode_lengths[done].tolist())
            self.episode_returns[done] = 0.0
            self.episode_lengths[done] = 0
        return obs, rewards, terminated, truncated, info
