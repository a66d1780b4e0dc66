"""Playing whole evaluation episodes with a policy, outside the rollout workers: shared by ``sample_factory.eval``
(many episodes of a trained policy, in one process) and the evaluator that runs beside training (``evaluator``).

A round of evaluation steps a few envs side by side with one batched forward pass per step (``EpisodeStepper``), and
counts its episodes when they *start* (``EpisodeBudget``): stopping once N episodes have *finished* would keep the
ones that finished first, i.e. the short ones, and bias the averages (towards failures in CartPole-like tasks). The
first N episodes to start are the sample; those still running when the budget is used up are played to their end,
and episodes started afterwards are not counted. Single-agent envs get the multi-agent protocol (lists of one,
auto-reset), so one loop serves both kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sample_factory.algo.sampling.env_runner import make_action_converter
from sample_factory.envs.create_env import create_env
from sample_factory.envs.env_contract import reset_env
from sample_factory.envs.env_info import EnvInfo
from sample_factory.model.action_distributions import actions_in_buffer_layout, argmax_actions
from sample_factory.model.actor_critic import ActorCritic
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config

# ---- one forward pass ---------------------------------------------------------------------------------------------


def to_numpy(x: Any) -> np.ndarray:
    """A numpy array from a tensor (any device), a list of them or anything ``np.asarray`` takes."""
    if isinstance(x, Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, (list, tuple)):
        return np.stack([to_numpy(item) for item in x])
    return np.asarray(x)


def obs_to_tensors(obs: Any, device: torch.device) -> dict[str, Tensor]:
    """Per-agent observations (list of arrays/dicts, a batched array or a dict of batched arrays) -> ``[A, ...]``."""
    if isinstance(obs, (list, tuple)) and obs and isinstance(obs[0], dict):
        obs = {key: [agent_obs[key] for agent_obs in obs] for key in obs[0]}
    if not isinstance(obs, dict):
        obs = {"obs": obs}
    return {key: torch.as_tensor(to_numpy(value)).to(device) for key, value in obs.items()}


@torch.no_grad()
def policy_step(
    model: ActorCritic, obs: dict[str, Tensor], rnn_states: Tensor, deterministic: bool
) -> tuple[Tensor, Tensor]:
    """Actions ``[A, ...]`` and new RNN states for all agents in one forward pass; ``deterministic`` takes the most
    likely action (``--eval_deterministic``) instead of a sampled one."""
    normalized = model.normalize_obs(obs)
    out = model(normalized, rnn_states, action_mask=obs.get("action_mask"))
    actions = argmax_actions(model.action_distribution()) if deterministic else out["actions"]
    return actions_in_buffer_layout(actions, model.action_space), out["new_rnn_states"]


@dataclass
class AgentPolicy:
    """A loaded policy and the agents (indices within an env) it acts for; ``agents`` None: every agent."""

    model: ActorCritic
    agents: list[int] | None
    convert: Callable[[np.ndarray], Any]  # buffer action row -> the env's action


def single_policy(model: ActorCritic) -> list[AgentPolicy]:
    """One policy acting for every agent (all agents have its spaces)."""
    return [AgentPolicy(model, None, make_action_converter(model.action_space))]


def actor_sets(policies: list[AgentPolicy], num_agents: int, num_actors: int) -> list[list[int]] | None:
    """For each policy, the actors it acts for among ``num_actors`` (the agents of consecutive envs of ``num_agents``
    agents each); None when one policy acts for every actor."""
    if len(policies) == 1 and policies[0].agents is None:
        return None
    return [[a for a in range(num_actors) if a % num_agents in policy.agents] for policy in policies]


def policies_step(
    policies: list[AgentPolicy],
    sets: list[list[int]] | None,
    obs: list,
    rnn_states: Tensor,
    device: torch.device,
    deterministic: bool,
) -> list:
    """Every actor's env action from the policy that acts for it (``sets``: from ``actor_sets``); updates
    ``rnn_states`` (one row per actor) in place."""
    if sets is None:
        policy = policies[0]
        actions, rnn_states[:] = policy_step(policy.model, obs_to_tensors(obs, device), rnn_states, deterministic)
        return [policy.convert(row) for row in actions.cpu().numpy()]
    env_actions: list = [None] * len(obs)
    for policy, actors in zip(policies, sets, strict=True):
        if not actors:
            continue
        index = torch.tensor(actors, device=rnn_states.device)
        agent_obs = obs_to_tensors([obs[a] for a in actors], device)
        actions, rnn_states[index] = policy_step(policy.model, agent_obs, rnn_states[index], deterministic)
        for actor, row in zip(actors, actions.cpu().numpy(), strict=True):
            env_actions[actor] = policy.convert(row)
    return env_actions


# ---- episode bookkeeping ------------------------------------------------------------------------------------------


@dataclass
class EpisodeRecord:
    """One finished episode of one agent."""

    env: int
    agent: int
    episode: int
    reward: float
    length: int
    true_objective: float
    extra: dict[str, float] = field(default_factory=dict)


class EpisodeBudget:
    """Hands out episode indices to episodes as they start, until ``num_episodes`` have started."""

    def __init__(self, num_episodes: int) -> None:
        self.num_episodes = num_episodes
        self.started = 0

    def start(self) -> int:
        """The new episode's index, or -1 when the budget is spent (the episode is then not evaluated)."""
        if self.started >= self.num_episodes:
            return -1
        self.started += 1
        return self.started - 1


class ActorTracker:
    """Per-actor (env, agent) episode index, running reward and length; finished counted episodes are kept."""

    def __init__(self, agents_per_env: list[int], budget: EpisodeBudget) -> None:
        self.slots = [(env, agent) for env, count in enumerate(agents_per_env) for agent in range(count)]
        self.budget = budget
        self.episode = np.array([budget.start() for _ in self.slots], dtype=np.int64)  # -1: not evaluated
        self.reward = np.zeros(len(self.slots))
        self.length = np.zeros(len(self.slots), dtype=np.int64)
        self.records: list[EpisodeRecord] = []

    def add(self, actor: int, reward: float) -> None:
        self.reward[actor] += reward
        self.length[actor] += 1

    def finish(self, actor: int, info: dict) -> None:
        """Record the actor's episode if it counts, then start the actor's next one."""
        if self.episode[actor] >= 0:
            env, agent = self.slots[actor]
            reward = float(self.reward[actor])
            objective = float(info.get("true_objective", reward)) if isinstance(info, dict) else reward
            extra = info.get("episode_extra_stats", {}) if isinstance(info, dict) else {}
            record = EpisodeRecord(env, agent, int(self.episode[actor]), reward, int(self.length[actor]), objective)
            record.extra = {k: float(v) for k, v in extra.items()}
            self.records.append(record)
        self.reward[actor], self.length[actor] = 0.0, 0
        self.episode[actor] = self.budget.start()

    def env_busy(self, first_actor: int, num_agents: int) -> bool:
        """An env still needs stepping while one of its agents plays an evaluated episode."""
        return bool((self.episode[first_actor : first_actor + num_agents] >= 0).any())

    def done(self) -> bool:
        return self.budget.started >= self.budget.num_episodes and not (self.episode >= 0).any()


def episode_averages(records: list[EpisodeRecord]) -> dict[str, float]:
    """``episodes``, ``avg_reward`` (with ``std_reward``, ``min_reward``, ``max_reward``), ``avg_episode_len``,
    ``avg_true_objective`` and ``avg_<key>`` of every ``info["episode_extra_stats"]`` key, over ``records`` (an
    extra stat counts only the episodes that reported it; one named like a built-in result is left out)."""
    if not records:
        return {"episodes": 0.0}
    rewards = np.array([r.reward for r in records])
    averages = {
        "episodes": float(len(records)),
        "avg_reward": float(rewards.mean()),
        "std_reward": float(rewards.std()),
        "min_reward": float(rewards.min()),
        "max_reward": float(rewards.max()),
        "avg_episode_len": float(np.mean([r.length for r in records])),
        "avg_true_objective": float(np.mean([r.true_objective for r in records])),
    }
    for key in sorted({key for record in records for key in record.extra}):
        averages.setdefault(f"avg_{key}", float(np.mean([r.extra[key] for r in records if key in r.extra])))
    return averages


# ---- envs ---------------------------------------------------------------------------------------------------------


class SingleAgentEnv:
    """The multi-agent protocol (lists of one, auto-reset) for a single-agent env."""

    num_agents = 1

    def __init__(self, env: Any) -> None:
        self.env = env

    def reset(self, seed: int | None = None) -> list:
        return [reset_env(self.env, seed)[0]]

    def step(self, actions: list) -> tuple[list, list, list, list]:
        obs, reward, terminated, truncated, info = self.env.step(actions[0])
        if terminated or truncated:
            obs, _ = self.env.reset()
        return [obs], [reward], [bool(terminated or truncated)], [info]

    def close(self) -> None:
        self.env.close()


class MultiAgentEnv:
    """A multi-agent env (auto-resets its agents itself) with per-agent lists out."""

    def __init__(self, env: Any, num_agents: int) -> None:
        self.env = env
        self.num_agents = num_agents

    def reset(self, seed: int | None = None) -> list:
        return split_agents(reset_env(self.env, seed)[0], self.num_agents)

    def step(self, actions: list) -> tuple[list, list, list, list]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        dones = np.asarray(terminated, dtype=bool).reshape(-1) | np.asarray(truncated, dtype=bool).reshape(-1)
        infos = list(infos) if isinstance(infos, (list, tuple)) else [infos] * self.num_agents
        rewards = np.asarray(rewards, dtype=np.float64).reshape(-1)
        return split_agents(obs, self.num_agents), list(rewards), list(dones), infos

    def close(self) -> None:
        self.env.close()


def split_agents(obs: Any, num_agents: int) -> list:
    """Per-agent observations from a list, a batched array or a dict of batched arrays."""
    if isinstance(obs, dict):
        return [{key: value[agent] for key, value in obs.items()} for agent in range(num_agents)]
    return [obs[agent] for agent in range(num_agents)]


def make_eval_envs(
    cfg: Config,
    env_info: EnvInfo,
    num_envs: int,
    env_name: str | None = None,
    worker_index: int = 0,
    first_env_id: int = 0,
) -> list[SingleAgentEnv | MultiAgentEnv]:
    """``num_envs`` envs of ``env_name`` (default ``--env``); ``worker_index`` and ``first_env_id`` go into each env's
    ``env_config``, so envs that pick ports or levels by them do not collide with the rollout workers' envs."""
    envs = []
    for i in range(num_envs):
        env_config = AttrDict(worker_index=worker_index, vector_index=i, env_id=first_env_id + i)
        env = create_env(env_name or cfg.env, cfg=cfg, env_config=env_config)
        envs.append(MultiAgentEnv(env, env_info.num_agents) if env_info.is_multiagent else SingleAgentEnv(env))
    return envs


# ---- stepping -----------------------------------------------------------------------------------------------------


class EpisodeStepper:
    """Steps ``envs`` with ``model`` one batched forward pass at a time, for the episodes of an ``ActorTracker``.

    ``begin(tracker, seeds)`` resets every env (``seeds[i]`` for env ``i``, None for a random start) and zeroes the
    RNN states; each ``step()`` then acts once in every env that still plays a counted episode, and returns how many
    env steps it took, so a caller can stop between two steps (the evaluator does, to stay responsive).
    """

    def __init__(
        self,
        envs: list,
        env_info: EnvInfo,
        policies: list[AgentPolicy],
        device: torch.device,
        cfg: Config,
        deterministic: bool,
    ) -> None:
        """``policies``: who acts for which agents (``single_policy(model)``: one model for all of them)."""
        self.envs = envs
        self.policies = policies
        self.num_agents = env_info.num_agents
        self.sets: list[list[int]] | None = None
        self.device = device
        self.deterministic = deterministic
        self.rnn_size = get_rnn_size(cfg)
        self.tracker: ActorTracker | None = None
        self.obs: list = []
        self.rnn_states = torch.zeros(0)

    def begin(self, tracker: ActorTracker, seeds: list[int | None]) -> None:
        self.tracker = tracker
        self.obs = [agent_obs for env, seed in zip(self.envs, seeds, strict=True) for agent_obs in env.reset(seed=seed)]
        self.rnn_states = torch.zeros(len(self.obs), self.rnn_size, device=self.device)
        self.sets = actor_sets(self.policies, self.num_agents, len(self.obs))

    @property
    def model(self) -> ActorCritic:
        """The model of the first policy (the only one when all agents are alike)."""
        return self.policies[0].model

    def step(self) -> int:
        """One forward pass per policy, one env step for every env still needed; returns the env steps."""
        actions = policies_step(self.policies, self.sets, self.obs, self.rnn_states, self.device, self.deterministic)
        frames, first = 0, 0
        for env in self.envs:
            if self.tracker.env_busy(first, env.num_agents):
                self._step_env(env, first, actions)
                frames += 1
            first += env.num_agents
        return frames

    def _step_env(self, env: Any, first: int, actions: list) -> None:
        """One step of one env: updates the observations, zeroes the RNN state of actors whose episode ended."""
        env_actions = actions[first : first + env.num_agents]
        new_obs, rewards, dones, infos = env.step(env_actions)
        for agent in range(env.num_agents):
            actor = first + agent
            self.obs[actor] = new_obs[agent]
            self.tracker.add(actor, float(rewards[agent]))
            if dones[agent]:
                self.tracker.finish(actor, infos[agent])
                self.rnn_states[actor] = 0.0
