"""Agents of different spaces write into their own group's trajectory buffers: observations and actions of each
agent at its own shape, in its own buffers; per-step scalars wherever the slot is read."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from sample_factory.algo.sampling.actor_buffers import ActorBuffers
from sample_factory.algo.sampling.env_runner import EpisodeStats
from sample_factory.algo.sampling.mixed_spaces_runner import MixedSpacesEnvRunner
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.shared_buffers import allocate_trajectory_buffers, numpy_views
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import extract_env_info

SEEN = gym.spaces.Box(-100.0, 100.0, (3,), np.float32)
WIDE = gym.spaces.Box(-100.0, 100.0, (5,), np.float32)


class TwoKindsEnv(gym.Env):
    """Agent 0 sees 3 numbers and moves with a 2-d velocity, agent 1 sees 5 and picks one of 4 moves. Observations
    carry the step and agent index; each step records the actions received."""

    num_agents, is_multiagent = 2, True

    def __init__(self) -> None:
        self.observation_spaces = [SEEN, WIDE]
        self.action_spaces = [gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Discrete(4)]
        self.observation_space, self.action_space = SEEN, self.action_spaces[0]
        self.t = 0
        self.received: list = []

    def _obs(self) -> list[np.ndarray]:
        return [np.full(3, self.t, np.float32), np.full(5, 10 + self.t, np.float32)]

    def reset(self, seed=None, options=None):
        self.t = 0
        return self._obs(), [{}, {}]

    def step(self, actions):
        self.received.append(actions)
        self.t += 1
        return self._obs(), [1.0, 2.0], [False, False], [False, False], [{}, {}]


def two_kinds(rollout: int):
    """Flags, env info, policy assignment and 4 trajectory slots per kind for ``TwoKindsEnv``."""
    cfg = default_cfg(env="x")
    cfg.rollout, cfg.num_policies = rollout, 2
    info = extract_env_info(TwoKindsEnv(), cfg)
    spaces = PolicySpaces(cfg, info)
    return cfg, info, spaces, allocate_trajectory_buffers(cfg, spaces, num_slots=4, share=False)


def test_each_agent_reads_and_writes_its_own_groups_buffers() -> None:
    cfg, info, spaces, buffers = two_kinds(rollout=4)
    pursuers, evaders = buffers.by_group
    assert pursuers["obs"]["obs"].shape[-1] == 3 and evaders["obs"]["obs"].shape[-1] == 5
    assert pursuers["actions"].shape[2:] == (2,) and evaders["actions"].shape[2:] == ()

    envs = [TwoKindsEnv(), TwoKindsEnv()]
    runner = MixedSpacesEnvRunner(cfg, info, envs, [numpy_views(t) for t in buffers.by_group], spaces.agent_group)
    runner.stats = EpisodeStats(4)  # the rollout worker's, in a run
    runner.state.slots[:] = [3, 0, 1, 2]  # env 0: agents in slots 3 and 0; env 1: slots 1 and 2
    runner.reset([None, None])
    pursuers["actions"][[3, 1], 0] = torch_rows([[0.5, -0.5], [0.25, 0.0]])
    evaders["actions"][[0, 2], 0] = torch_rows([2, 3])
    runner.step()

    assert pursuers["obs"]["obs"][3, 1].tolist() == [1.0] * 3 and evaders["obs"]["obs"][0, 1].tolist() == [11.0] * 5
    assert evaders["obs"]["obs"][3].abs().sum() == 0, "a pursuer's slot holds nothing in the evaders' buffers"
    first, second = envs[0].received[0], envs[1].received[0]
    assert np.allclose(first[0], [0.5, -0.5]) and int(first[1]) == 2
    assert np.allclose(second[0], [0.25, 0.0]) and int(second[1]) == 3
    for traj in buffers.by_group:  # read by whichever group's learner gets the slot
        assert traj["rewards"][[3, 0, 1, 2], 0].tolist() == [1.0, 2.0, 1.0, 2.0]


def test_carry_over_and_rnn_resets_follow_each_actors_group() -> None:
    _, _, _, buffers = two_kinds(rollout=2)
    actor_buffers = ActorBuffers(buffers, num_agents=2)
    parts = actor_buffers.split_parts(num_actors=2)
    assert [(g, list(actors)) for g, actors in parts] == [(0, [0]), (1, [1])]
    carry = actor_buffers.allocate_carry(parts, num_actors=2)
    buffers.by_group[0]["obs"]["obs"][2, 2] = 7.0
    buffers.by_group[1]["obs"]["obs"][3, 2] = 9.0
    actor_buffers.stage_carry_over(parts, carry, np.array([2, 3]), last=2)
    actor_buffers.begin_rollout(parts, carry, np.array([0, 1]))
    assert buffers.by_group[0]["obs"]["obs"][0, 0].tolist() == [7.0] * 3
    assert buffers.by_group[1]["obs"]["obs"][1, 0].tolist() == [9.0] * 5
    buffers.by_group[1]["rnn_states"][1, 0] = 1.0
    actor_buffers.zero_rnn_states(np.array([1]), 0)
    assert buffers.by_group[1]["rnn_states"][1, 0].abs().sum() == 0


def torch_rows(rows):
    import torch

    return torch.tensor(rows)
