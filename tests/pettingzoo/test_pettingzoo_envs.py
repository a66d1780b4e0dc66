"""PettingZooParallelEnv on a scripted parallel env: slots, inactive agents, auto-reset, space conversions.

No PettingZoo needed: the fake env follows the parallel API (dicts keyed by agent, finished agents leave
``agents``), which is all the wrapper relies on.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import extract_env_info
from sample_factory.envs.pettingzoo_envs import PettingZooParallelEnv


class ScriptedParallelEnv:
    """Agent ``a{i}`` finishes after ``lifetimes[i]`` steps; reward = 10 * agent index + action."""

    metadata = {"name": "scripted_v0"}

    def __init__(self, lifetimes=(1, 3), obs_space=None, action_space=None) -> None:
        self.possible_agents = [f"a{i}" for i in range(len(lifetimes))]
        self.lifetimes = lifetimes
        self._obs_space = obs_space or gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
        self._action_space = action_space or gym.spaces.Discrete(3)
        self.agents: list[str] = []
        self.t = 0
        self.resets = 0
        self.received: list[dict] = []

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._action_space

    def _obs(self):
        return {a: np.full(2, self.t + 1, dtype=np.float64) for a in self.agents}

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        self.resets += 1
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        self.received.append(dict(actions))
        self.t += 1
        rewards = {a: 10.0 * int(a[1:]) + float(actions[a]) for a in self.agents}
        terms = {a: self.t >= self.lifetimes[int(a[1:])] for a in self.agents}
        obs = self._obs()
        infos = {a: {"t": self.t} for a in self.agents}
        self.agents = [a for a in self.agents if not terms[a]]
        return obs, rewards, terms, {a: False for a in terms}, infos

    def close(self):
        pass


def test_finished_agent_is_inactive_until_everyone_is_done() -> None:
    raw = ScriptedParallelEnv(lifetimes=(1, 3))
    env = PettingZooParallelEnv(raw)
    assert env.num_agents == 2 and env.is_multiagent
    obs, infos = env.reset(seed=0)
    assert obs[0].dtype == np.float32 and env.observation_space.dtype == np.float32

    obs, rewards, terminated, truncated, infos = env.step([1, 2])
    assert rewards == [1.0, 12.0] and terminated == [True, False]
    assert infos[0].get("is_active", True) and infos[1] == {"t": 1}

    obs, rewards, terminated, truncated, infos = env.step([1, 0])
    assert raw.received[-1] == {"a1": 0}, "a finished agent must not be sent an action"
    assert rewards == [0.0, 10.0] and terminated == [False, False]
    assert infos[0] == {"is_active": False} and infos[1].get("is_active", True)
    assert np.all(obs[0] == 0.0), "an inactive agent sees zeros"

    obs, rewards, terminated, truncated, infos = env.step([0, 0])
    assert terminated == [False, True] and raw.resets == 2, "the env resets once no agent is left"
    assert infos[0] == {"is_active": False}
    assert np.all(obs[0] == 1.0) and np.all(obs[1] == 1.0), "every slot gets its next episode's first observation"

    obs, rewards, terminated, truncated, infos = env.step([2, 2])
    assert rewards == [2.0, 12.0] and all(info.get("is_active", True) for info in infos)


def test_agents_of_different_spaces_keep_their_own_spaces() -> None:
    """Each agent's observation conversion, zero observation and action handling follow its own spaces, and the
    env info lists them per agent (each kind of agent then gets a policy of its own)."""
    raw = ScriptedParallelEnv(lifetimes=(1, 3))
    obs_spaces = {"a0": gym.spaces.Discrete(4), "a1": gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)}
    act_spaces = {"a0": gym.spaces.Discrete(3), "a1": gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)}
    raw.observation_space, raw.action_space = obs_spaces.__getitem__, act_spaces.__getitem__
    raw._obs = lambda: {a: (1 if a == "a0" else np.full(2, 0.5)) for a in raw.agents}
    env = PettingZooParallelEnv(raw)
    assert [s.shape for s in env.observation_spaces] == [(4,), (2,)]
    assert env.action_spaces == [act_spaces["a0"], act_spaces["a1"]]
    obs, _ = env.reset()
    assert obs[0].tolist() == [0.0, 1.0, 0.0, 0.0] and obs[1].dtype == np.float32
    raw.step = lambda actions: (raw.received.append(actions), ({}, {}, {}, {}, {}))[1]
    env.step([np.array([2]), np.array([5.0])])
    assert raw.received[-1]["a0"] == 2 and raw.received[-1]["a1"].tolist() == [1.0]

    info = extract_env_info(env, default_cfg(env="x"))
    assert info.heterogeneous and info.space_groups() == [0, 1]


def test_discrete_observations_become_one_hot() -> None:
    env = PettingZooParallelEnv(ScriptedParallelEnv(obs_space=gym.spaces.Discrete(4)))
    assert env.observation_space.shape == (4,)
    assert env.obs_transforms[0].fn(2).tolist() == [0.0, 0.0, 1.0, 0.0]


def test_box_actions_are_clipped_to_the_space() -> None:
    box = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    raw = ScriptedParallelEnv(lifetimes=(5, 5), action_space=box)
    raw.step = lambda actions: (raw.received.append(actions), ({}, {}, {}, {}, {}))[1]
    env = PettingZooParallelEnv(raw)
    env.reset()
    env.step([np.array([3.0]), np.array([-0.5])])
    assert raw.received[-1]["a0"].tolist() == [1.0] and raw.received[-1]["a1"].tolist() == [-0.5]
