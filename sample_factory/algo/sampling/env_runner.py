"""Steps one split of a rollout worker's envs and writes the results into trajectory slots.

A split is a group of envs that step together. Each agent of each env is an
*actor* with its own trajectory slot. Two flavours share one interface:

- :class:`NonBatchedEnvRunner`: a list of ordinary (single- or multi-agent) envs,
  stepped one by one; results are staged in small numpy arrays and written to
  the shared slots with one indexed write per key per step.
- :class:`BatchedEnvRunner`: one env object that steps many agents at once
  (vectorised or GPU-simulated envs, ``--batched_sampling``); each write is a
  single tensor operation for the whole split.

The runner never talks to other processes: the rollout worker does that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.shared_buffers import obs_space_dict
from sample_factory.algo.utils.spaces.discretized import Discretized
from sample_factory.utils.typing import Config


@dataclass
class EpisodeStats:
    """Per-actor episode bookkeeping; finished episodes are moved to ``finished``."""

    num_actors: int
    reward: np.ndarray = field(init=False)
    length: np.ndarray = field(init=False)
    finished: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reward = np.zeros(self.num_actors, dtype=np.float64)
        self.length = np.zeros(self.num_actors, dtype=np.int64)

    def episode_done(self, actor: int, policy_id: int, info: dict) -> None:
        reward = float(self.reward[actor])
        objective = info.get("true_objective", reward)
        self.finished.append(
            (policy_id, reward, int(self.length[actor]), float(objective), info.get("episode_extra_stats"))
        )
        self.reward[actor] = 0.0
        self.length[actor] = 0


def make_action_converter(action_space):
    """Returns ``row -> env action`` for one actor's stored action row.

    Tuple actions are stored flat (one component per Discrete part, ``prod(shape)``
    components per Box part); the converter cuts the row back into the parts.
    """
    import gymnasium as gym

    if isinstance(action_space, Discretized):
        return lambda a: action_space.to_continuous(int(a))
    if isinstance(action_space, gym.spaces.Discrete):
        start = int(action_space.start)
        return (lambda a: int(a) + start) if start else int
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return lambda a: np.asarray(a, dtype=np.int64)
    if isinstance(action_space, gym.spaces.Tuple):
        parts = [(make_action_converter(s), _num_components(s), _is_scalar_action(s)) for s in action_space.spaces]

        def convert(row):
            out, i = [], 0
            for conv, n, scalar in parts:
                out.append(conv(row[i]) if scalar else conv(row[i : i + n]))
                i += n
            return tuple(out)

        return convert
    if isinstance(action_space, gym.spaces.Box):
        shape = action_space.shape
        return lambda a: np.asarray(a, dtype=action_space.dtype).reshape(shape)
    return lambda a: a


def _is_scalar_action(space) -> bool:
    import gymnasium as gym

    return isinstance(space, gym.spaces.Discrete)


def _num_components(space) -> int:
    import gymnasium as gym

    if isinstance(space, gym.spaces.Discrete):
        return 1
    if isinstance(space, gym.spaces.MultiDiscrete):
        return len(space.nvec)
    return int(np.prod(space.shape))


class SplitState:
    """The slots and policies of a split's actors and the current step within the rollout."""

    def __init__(self, num_actors: int) -> None:
        self.num_actors = num_actors
        self.slots = np.full(num_actors, -1, dtype=np.int64)
        self.policy = np.zeros(num_actors, dtype=np.int64)
        self.next_policy = np.zeros(num_actors, dtype=np.int64)
        self.t = 0
        self.frames = np.zeros(num_actors, dtype=np.int64)  # env frames of each actor's current trajectory


class NonBatchedEnvRunner:
    """Steps a list of envs; each env contributes ``num_agents`` consecutive actors."""

    def __init__(self, cfg: Config, env_info: EnvInfo, envs: list, traj_np: dict, stats: EpisodeStats) -> None:
        self.cfg = cfg
        self.envs = envs
        self.num_agents = env_info.num_agents
        self.multiagent = env_info.is_multiagent
        self.state = SplitState(len(envs) * self.num_agents)
        self.stats = stats
        self.traj = traj_np
        self.obs_keys = list(obs_space_dict(env_info.obs_space).keys())
        self.plain_obs = not isinstance(getattr(env_info.obs_space, "spaces", None), dict)
        self.convert_action = make_action_converter(env_info.action_space)
        self.default_frames = max(1, env_info.frameskip)
        n = self.state.num_actors
        self._rew = np.zeros(n, dtype=np.float32)
        self._done = np.zeros(n, dtype=np.float32)
        self._timeout = np.zeros(n, dtype=np.float32)
        self._valid = np.ones(n, dtype=bool)
        self.last_dones = self._done

    # ---- observation writing ----
    def _write_obs(self, actor: int, obs, t: int) -> None:
        slot = self.state.slots[actor]
        if self.plain_obs:
            self.traj["obs"]["obs"][slot, t] = obs
        else:
            for key in self.obs_keys:
                self.traj["obs"][key][slot, t] = obs[key]

    def reset(self, seeds: list[int | None]) -> None:
        """Reset every env; observations go to step 0 of the actors' slots."""
        for env_idx, env in enumerate(self.envs):
            obs, infos = env.reset(seed=seeds[env_idx])
            for agent in range(self.num_agents):
                actor = env_idx * self.num_agents + agent
                self._write_obs(actor, obs[agent] if self.multiagent else obs, 0)
        self.state.t = 0

    def step(self) -> None:
        """Apply the actions stored at step ``t`` and write rewards, dones and next observations."""
        st = self.state
        t = st.t
        actions = self.traj["actions"][st.slots, t]
        stats = self.stats
        for env_idx, env in enumerate(self.envs):
            base = env_idx * self.num_agents
            if self.multiagent:
                env_actions = [self.convert_action(actions[base + a]) for a in range(self.num_agents)]
                self._step_multi(env, env_idx, base, env_actions, t, stats)
            else:
                self._step_single(env, base, self.convert_action(actions[base]), t, stats)
        self.traj["rewards"][st.slots, t] = self._rew
        self.traj["dones"][st.slots, t] = self._done
        self.traj["time_outs"][st.slots, t] = self._timeout
        self.traj["valids"][st.slots, t] = self._valid
        st.t = t + 1

    def _step_single(self, env, actor: int, action, t: int, stats: EpisodeStats) -> None:
        obs, reward, terminated, truncated, info = env.step(action)
        self._record(actor, reward, terminated, truncated, info, stats)
        if terminated or truncated:
            obs, _ = env.reset()
            stats.episode_done(actor, int(self.state.policy[actor]), info)
        self._write_obs(actor, obs, t + 1)

    def _step_multi(self, env, env_idx: int, base: int, actions: list, t: int, stats: EpisodeStats) -> None:
        obs, rewards, terminated, truncated, infos = env.step(actions)
        for agent in range(self.num_agents):
            actor = base + agent
            info = infos[agent] if infos else {}
            self._record(actor, rewards[agent], terminated[agent], truncated[agent], info, stats)
            if terminated[agent] or truncated[agent]:
                stats.episode_done(actor, int(self.state.policy[actor]), info)
            self._write_obs(actor, obs[agent], t + 1)

    def _record(self, actor: int, reward, terminated, truncated, info: dict, stats: EpisodeStats) -> None:
        self._rew[actor] = reward
        done = bool(terminated or truncated)
        self._done[actor] = done
        self._timeout[actor] = bool(truncated) and not bool(terminated)
        active = info.get("is_active", True) if info else True
        self._valid[actor] = active
        if active:
            stats.reward[actor] += reward
            stats.length[actor] += 1
        self.state.frames[actor] += info.get("num_frames", self.default_frames) if info else self.default_frames

    def close(self) -> None:
        for env in self.envs:
            env.close()


class BatchedEnvRunner:
    """Steps one env object that simulates all of the split's actors at once.

    The env follows the multi-agent protocol with ``num_agents`` = number of actors
    and returns arrays or tensors (``obs`` as an array or a dict of arrays).
    """

    def __init__(self, cfg: Config, env_info: EnvInfo, env, traj: dict, stats: EpisodeStats) -> None:
        self.env = env
        self.traj = traj  # torch tensors here: whole-split writes are single tensor ops
        self.state = SplitState(env_info.num_agents)
        self.stats = stats
        self.plain_obs = not isinstance(getattr(env_info.obs_space, "spaces", None), dict)
        self.frames_per_step = max(1, env_info.frameskip)
        self.last_dones = np.zeros(env_info.num_agents, dtype=bool)

    def _slots(self) -> torch.Tensor:
        return torch.from_numpy(self.state.slots)

    def _write_obs(self, obs, t: int) -> None:
        slots = self._slots()
        obs_dict = {"obs": obs} if self.plain_obs else obs
        for key, value in obs_dict.items():
            self.traj["obs"][key][slots, t] = torch.as_tensor(value).to(self.traj["obs"][key].dtype)

    def reset(self, seeds: list[int | None]) -> None:
        obs, _ = self.env.reset(seed=seeds[0])
        self._write_obs(obs, 0)
        self.state.t = 0

    def step(self) -> None:
        st, t = self.state, self.state.t
        slots = self._slots()
        actions = self.traj["actions"][slots, t]
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        rewards = torch.as_tensor(rewards, dtype=torch.float32).flatten()
        terminated = torch.as_tensor(terminated, dtype=torch.bool).flatten()
        truncated = torch.as_tensor(truncated, dtype=torch.bool).flatten()
        dones = terminated | truncated
        self.traj["rewards"][slots, t] = rewards
        self.traj["dones"][slots, t] = dones.float()
        self.traj["time_outs"][slots, t] = (truncated & ~terminated).float()
        self.traj["valids"][slots, t] = True
        self._write_obs(obs, t + 1)
        self.last_dones = dones.numpy()
        self._update_stats(rewards.numpy(), self.last_dones, infos)
        st.frames += self.frames_per_step
        st.t = t + 1

    def _update_stats(self, rewards: np.ndarray, dones: np.ndarray, infos) -> None:
        self.stats.reward += rewards
        self.stats.length += 1
        for actor in np.flatnonzero(dones):
            info = infos[actor] if isinstance(infos, (list, tuple)) else {}
            self.stats.episode_done(int(actor), int(self.state.policy[actor]), info)

    def close(self) -> None:
        self.env.close()
