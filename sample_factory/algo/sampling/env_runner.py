"""Steps one split of a rollout worker's envs and writes the results into trajectory slots.

A split is a group of envs that step together. Each agent of each env is an
*actor* with its own trajectory slot. Two flavours share one interface:

- :class:`NonBatchedEnvRunner`: a list of ordinary (single- or multi-agent) envs,
  stepped one by one; results are staged in small numpy arrays and written to
  the shared slots with one indexed write per key per step.
- :class:`BatchedEnvRunner`: one batched env object that steps all of the split's
  actors at once (``--batched_sampling``: a natively vectorised env, or any envs
  stacked by ``make_env_func_batched``); each write is a single tensor operation
  for the whole split.

The runner never talks to other processes: the rollout worker does that.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from sample_factory.algo.sampling.decorrelation import RandomActions, decorrelate
from sample_factory.algo.utils.shared_buffers import numpy_views
from sample_factory.envs.action_conversion import make_action_converter
from sample_factory.envs.contract_errors import EnvContractError
from sample_factory.envs.env_contract import CHECKED_STEPS, EnvContract, reset_env
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.make_env import BatchedVecEnv
from sample_factory.envs.spaces.layout import obs_space_dict
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.logging_setup import log
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import Config

# an env that fails this many times in a row, each time at once after being made again, has a bug: stop the run
MAX_FAILURES_IN_A_ROW = 3


class EnvKeepsFailing(RuntimeError):
    """An env raised again and again right after being recreated: recreating it will not help."""


class EnvRecovery:
    """``--env_error_behavior=recreate``: an env (or a split's batched env) that raised is closed and made again.

    ``make(i)`` makes env ``i`` of the split afresh. The actors of a recreated env end their episode at the failed
    step (done, invalid, zero reward: nothing of it is trained on or counted in the episode statistics).
    ``errors`` collects one line per recreation for the rollout worker to report, then clear.

    Failures count as "in a row" only while a new env fails at once (in its creation, its first reset or its first
    step): an env that stepped in between was working, so a flaky env with long episodes (which may rarely finish an
    episode without an error) is recreated for as long as it keeps working between its errors. ``clock`` is the
    split's step count, advanced by the runner once per step of all its envs.
    """

    traceback_logged = False

    def __init__(self, make: Callable[[int], object], num_envs: int) -> None:
        self.make = make
        self.failures_in_row = [0] * num_envs
        self.replaced_at = [-2] * num_envs  # clock of each env's latest recreation
        self.clock = 0
        self.errors: list[str] = []

    def replace(self, envs: list, i: int, reset: Callable[[object], object]) -> object:
        """Close ``envs[i]`` (which just raised) and put a new, reset one in its place; returns its first obs.

        A new env whose creation or first reset raises is replaced again, up to the limit of failures in a row.
        """
        error = traceback.format_exc()
        if self.clock - self.replaced_at[i] > 1:  # it stepped since it was last made: a new run of failures
            self.failures_in_row[i] = 0
        self.replaced_at[i] = self.clock
        while True:
            self._count_failure(i, error)
            try:
                envs[i].close()
            except Exception:  # a broken env may fail to close too; it is dropped either way
                pass
            try:
                envs[i] = self.make(i)
                return reset(envs[i])
            except EnvContractError:
                raise  # a broken contract is the same in every new env
            except Exception:
                error = traceback.format_exc()

    def _count_failure(self, i: int, error: str) -> None:
        self.failures_in_row[i] += 1
        if self.failures_in_row[i] > MAX_FAILURES_IN_A_ROW:
            raise EnvKeepsFailing(
                f"env {i} of this split failed {self.failures_in_row[i]} times in a row, each time at once after being "
                "made again: fix the env, or run with --env_error_behavior=fail to stop at its first error"
            )
        if not EnvRecovery.traceback_logged:  # the first in a process in full; the runner counts all of them
            EnvRecovery.traceback_logged = True
            log.warning("An env raised and is recreated (its episode is dropped); later ones in one line:\n%s", error)
        self.errors.append(error.strip().splitlines()[-1])

    def episode_finished(self, i: int) -> None:
        self.failures_in_row[i] = 0


@dataclass
class EpisodeStats:
    """Per-actor episode bookkeeping; finished episodes are moved to ``finished``."""

    num_actors: int
    # --use_record_episode_statistics: report the env's own episode sums (info["episode"]["r"/"l"], written by a
    # RecordEpisodeStatistics wrapper) instead of ours, e.g. the unclipped reward under a reward-changing wrapper
    env_episode_stats: bool = False
    reward: np.ndarray = field(init=False)
    length: np.ndarray = field(init=False)
    finished: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reward = np.zeros(self.num_actors, dtype=np.float64)
        self.length = np.zeros(self.num_actors, dtype=np.int64)

    def episode_done(self, actor: int, policy_id: int, info: dict) -> None:
        reward, length = float(self.reward[actor]), int(self.length[actor])
        if self.env_episode_stats:
            reward, length = _recorded_episode(info, reward, length)
        objective = info.get("true_objective", reward)
        self.finished.append((policy_id, reward, length, float(objective), info.get("episode_extra_stats")))
        self.reward[actor] = 0.0
        self.length[actor] = 0


def _recorded_episode(info: dict, reward: float, length: int) -> tuple[float, int]:
    """The episode's reward and length as an env wrapper recorded them in ``info["episode"]``, else ours."""
    episode = info.get("episode")
    if not isinstance(episode, dict) or "r" not in episode:
        return reward, length
    recorded_length = episode.get("l", length)
    return float(np.asarray(episode["r"]).item()), int(np.asarray(recorded_length).item())


def split_env_config(cfg: Config, worker_idx: int, vector_index: int) -> AttrDict:
    """The ``env_config`` of env ``vector_index`` of a worker: ``env_id`` is unique across the whole run."""
    env_id = worker_idx * cfg.num_envs_per_worker + vector_index
    return AttrDict(worker_index=worker_idx, vector_index=vector_index, env_id=env_id)


def env_seed(cfg: Config, worker_idx: int, split: int, i: int) -> int | None:
    """Seed of env ``i`` of a split: distinct for every env of a run, None (random) without ``--seed``."""
    if cfg.seed is None:
        return None
    return cfg.seed * 100_003 + worker_idx * 1009 + split * 101 + i


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
        self.env_info = env_info
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
        self.recovery: EnvRecovery | None = None  # set by the rollout worker with --env_error_behavior=recreate
        # the first steps of every (new) env are checked against the Gymnasium API and the env's spaces
        self.contract = EnvContract(
            str(cfg.env), env_info.obs_space, self.num_agents, self.multiagent, env_info.agent_obs_spaces
        )
        self.checks_left = CHECKED_STEPS

    # ---- observation writing ----
    def _write_obs(self, actor: int, obs, t: int) -> None:
        slot = self.state.slots[actor]
        if self.plain_obs:
            self.traj["obs"]["obs"][slot, t] = obs
        else:
            for key in self.obs_keys:
                self.traj["obs"][key][slot, t] = obs[key]

    def reset(self, seeds: list[int | None], decorrelation: list[int] | None = None) -> None:
        """Reset every env; observations go to step 0 of the actors' slots.

        ``decorrelation``: per env, random steps to take after the reset (``decorrelation.py``). With
        ``--env_error_behavior=recreate`` an env whose first reset (or those steps) raises is recreated like one that
        fails later: a flaky simulator may fail at start-up as well."""
        for env_idx, env in enumerate(self.envs):
            try:
                obs, infos = self.contract.reset_result(reset_env(env, seeds[env_idx]))
                if decorrelation and decorrelation[env_idx] > 0:
                    actions = RandomActions(self.env_info, seeds[env_idx])
                    obs = decorrelate(env, obs, decorrelation[env_idx], actions, self.contract.step_result)
            except EnvContractError:
                raise
            except Exception:
                if self.recovery is None:
                    raise
                obs = self.recovery.replace(
                    self.envs, env_idx, lambda e, s=seeds[env_idx]: self.contract.reset_result(reset_env(e, s))[0]
                )
            for agent in range(self.num_agents):
                actor = env_idx * self.num_agents + agent
                self._write_obs(actor, obs[agent] if self.multiagent else obs, 0)
        self.state.t = 0

    def step(self) -> None:
        """Apply the actions stored at step ``t`` and write rewards, dones and next observations."""
        st = self.state
        t = st.t
        if self.recovery is not None:
            self.recovery.clock += 1
        actions = self._env_actions(t)
        stats = self.stats
        for env_idx, env in enumerate(self.envs):
            base = env_idx * self.num_agents
            try:
                if self.multiagent:
                    self._step_multi(env, env_idx, base, actions[base : base + self.num_agents], t, stats)
                else:
                    self._step_single(env, base, actions[base], t, stats)
            except EnvContractError:
                raise  # recreating the env cannot fix a broken contract
            except Exception:
                if self.recovery is None:
                    raise
                self._recreate(env_idx, t)
        self._write_step(self.traj, t)
        st.t = t + 1
        if self.checks_left:
            self.checks_left -= 1

    def _env_actions(self, t: int) -> list:
        """Every actor's action of step ``t``, as its env takes it."""
        convert = self.convert_action
        return [convert(row) for row in self.traj["actions"][self.state.slots, t]]

    def _write_step(self, traj: dict, t: int) -> None:
        """Rewards, dones, time-outs and validity of step ``t`` of every actor, into ``traj``."""
        slots = self.state.slots
        traj["rewards"][slots, t] = self._rew
        traj["dones"][slots, t] = self._done
        traj["time_outs"][slots, t] = self._timeout
        traj["valids"][slots, t] = self._valid

    def _recreate(self, env_idx: int, t: int) -> None:
        """Env ``env_idx`` raised at step ``t``: a new one continues, its actors' episodes end here, uncounted."""
        obs = self.recovery.replace(self.envs, env_idx, lambda env: self.contract.reset_result(env.reset())[0])
        self.checks_left = CHECKED_STEPS  # the new env's first steps are checked too
        for agent in range(self.num_agents):
            actor = env_idx * self.num_agents + agent
            self._rew[actor], self._done[actor], self._timeout[actor], self._valid[actor] = 0.0, 1.0, 1.0, False
            self.stats.reward[actor], self.stats.length[actor] = 0.0, 0
            self._write_obs(actor, obs[agent] if self.multiagent else obs, t + 1)

    def _step_single(self, env, actor: int, action, t: int, stats: EpisodeStats) -> None:
        result = env.step(action)
        if self.checks_left:
            result = self.contract.step_result(result)
        obs, reward, terminated, truncated, info = result
        self._record(actor, reward, terminated, truncated, info, stats)
        if terminated or truncated:
            obs, _ = self.contract.reset_result(env.reset()) if self.checks_left else env.reset()
            stats.episode_done(actor, int(self.state.policy[actor]), info)
            if self.recovery is not None:
                self.recovery.episode_finished(actor)  # single-agent envs: the actor index is the env index
        self._write_obs(actor, obs, t + 1)

    def _step_multi(self, env, env_idx: int, base: int, actions: list, t: int, stats: EpisodeStats) -> None:
        result = env.step(actions)
        if self.checks_left:
            result = self.contract.step_result(result)
        obs, rewards, terminated, truncated, infos = result
        for agent in range(self.num_agents):
            actor = base + agent
            info = infos[agent] if infos else {}
            self._record(actor, rewards[agent], terminated[agent], truncated[agent], info, stats)
            if terminated[agent] or truncated[agent]:
                stats.episode_done(actor, int(self.state.policy[actor]), info)
                if self.recovery is not None:
                    self.recovery.episode_finished(env_idx)
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


def _numpy(value) -> np.ndarray:
    """A flat CPU numpy view of a per-actor env output (a copy only for GPU tensors and lists)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    value = np.asarray(value)
    return value if value.ndim == 1 else value.reshape(-1)


class BatchedEnvRunner:
    """Steps one batched env that simulates all of the split's actors at once.

    ``env`` is a :class:`BatchedVecEnv` (from ``make_env_func_batched``); any other env is wrapped in one. Its
    ``num_agents`` is the split's number of actors. Per step, actions are read and observations, rewards, dones and
    time-outs written for all actors with one indexed operation each (on numpy views of the shared tensors, which
    costs a fraction of a torch indexing call for small splits). Infos are read only when some actor has one:
    ``is_active`` (inactive actors' steps are not trained on and not counted in episode stats) and ``num_frames``
    (frameskip accounting), as in :class:`NonBatchedEnvRunner`.
    """

    def __init__(self, cfg: Config, env_info: EnvInfo, env, traj: dict, stats: EpisodeStats) -> None:
        self.env = env if isinstance(env, BatchedVecEnv) else BatchedVecEnv(env)
        self.traj = numpy_views(traj) if isinstance(traj, TensorDict) else traj
        n = self.env.num_agents
        self.state = SplitState(n)
        self.stats = stats
        self.frames_per_step = max(1, env_info.frameskip)
        self._active = np.ones(n, dtype=bool)
        self._frames = np.zeros(n, dtype=np.int64)
        self._dones = np.zeros(n, dtype=bool)
        self._time_outs = np.zeros(n, dtype=bool)
        self.last_dones = self._dones
        self.recovery: EnvRecovery | None = None  # make(0) makes the split's batched env again

    def _write_obs(self, obs: dict, t: int) -> None:
        for key, value in obs.items():
            self.traj["obs"][key][self.state.slots, t] = (
                value.cpu().numpy() if isinstance(value, torch.Tensor) else value
            )

    def reset(self, seeds: list[int | None]) -> None:
        """Reset the batch; the first seed seeds it (env ``i`` of a sequential batch gets ``seeds[0] + i``).

        With ``--env_error_behavior=recreate`` a batch whose first reset raises is recreated."""
        try:
            obs, _ = self.env.reset_arrays(seed=seeds[0])
        except Exception:
            if self.recovery is None:
                raise
            envs = [self.env]
            obs = self.recovery.replace(envs, 0, lambda env: env.reset_arrays(seed=seeds[0])[0])
            self.env = envs[0]
        self._write_obs(obs, 0)
        self.state.t = 0

    def step(self) -> None:
        st, t, traj = self.state, self.state.t, self.traj
        slots = st.slots
        if self.recovery is not None:
            self.recovery.clock += 1
        try:
            obs, rewards, terminated, truncated, infos = self.env.step_arrays(traj["actions"][slots, t])
        except Exception:
            if self.recovery is None:
                raise
            self._recreate(t)
            return
        rewards, terminated, truncated = _numpy(rewards), _numpy(terminated), _numpy(truncated)
        np.logical_or(terminated, truncated, out=self._dones)
        np.greater(truncated, terminated, out=self._time_outs)  # truncated and not terminated
        per_actor_infos = self._read_infos(infos)
        traj["rewards"][slots, t] = rewards
        traj["dones"][slots, t] = self._dones
        traj["time_outs"][slots, t] = self._time_outs
        traj["valids"][slots, t] = self._active
        self._write_obs(obs, t + 1)
        self._update_stats(rewards, per_actor_infos)
        st.t = t + 1

    def _recreate(self, t: int) -> None:
        """The batched env raised at step ``t``: all of the split's episodes end here, uncounted, in a new env."""
        envs = [self.env]
        obs = self.recovery.replace(envs, 0, lambda env: env.reset_arrays()[0])
        self.env = envs[0]
        traj, slots = self.traj, self.state.slots
        traj["rewards"][slots, t] = 0.0
        traj["dones"][slots, t] = True
        traj["time_outs"][slots, t] = True
        traj["valids"][slots, t] = False
        self._dones[:] = True
        self._write_obs(obs, t + 1)
        self.stats.reward[:] = 0.0
        self.stats.length[:] = 0
        self.state.t = t + 1

    def _read_infos(self, infos) -> list | None:
        """Fill ``is_active`` and frame counts from per-actor infos; None when no actor has any info."""
        if not isinstance(infos, (list, tuple)) or not any(infos):
            if not self._active.all():
                self._active[:] = True
            return None
        for actor, info in enumerate(infos):
            self._active[actor] = info.get("is_active", True) if info else True
            self._frames[actor] = info.get("num_frames", self.frames_per_step) if info else self.frames_per_step
        return infos

    def _update_stats(self, rewards: np.ndarray, infos: list | None) -> None:
        stats, state = self.stats, self.state
        if infos is None:  # every actor active, default frameskip
            stats.reward += rewards
            stats.length += 1
            state.frames += self.frames_per_step
        else:
            np.add(stats.reward, rewards, out=stats.reward, where=self._active)
            np.add(stats.length, 1, out=stats.length, where=self._active)
            state.frames += self._frames
        if self._dones.any():
            for actor in np.flatnonzero(self._dones):
                info = infos[actor] if infos is not None and infos[actor] else {}
                stats.episode_done(int(actor), int(state.policy[actor]), info)
            if self.recovery is not None:
                self.recovery.episode_finished(0)

    def close(self) -> None:
        self.env.close()


class SplitStats:
    """View of the worker's episode stats for one split's actors (actor indices shifted)."""

    def __init__(self, stats: EpisodeStats, offset: int, num_actors: int) -> None:
        self._stats = stats
        self._offset = offset
        # views into the worker's arrays: in-place updates write through
        self.reward = stats.reward[offset : offset + num_actors]
        self.length = stats.length[offset : offset + num_actors]

    def episode_done(self, actor: int, policy_id: int, info: dict) -> None:
        self._stats.episode_done(actor + self._offset, policy_id, info)
