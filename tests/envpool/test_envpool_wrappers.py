"""EnvPoolBatchedEnv and the family helpers on a fake pool: runs without envpool installed.

The fake follows the parts of EnvPool's gymnasium API the wrapper uses: ``step(actions, env_id)`` and
``reset(env_id)`` return rows tagged by ``info["env_id"]``, rewards are clipped while ``info["reward"]`` keeps the
raw ones, and a finished env would only be reset by the next ``step`` unless ``reset(env_id)`` is called.
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.envs.make_env import is_natively_vectorized
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.envpool.atari import envpool_atari_params
from sf_examples.envpool.envpool_utils import (
    canonical_env_name,
    envpool_available,
    pool_seed,
    require_envpool,
    rewrite_env_arg,
)
from sf_examples.envpool.envpool_wrappers import EnvPoolBatchedEnv


class FakePool:
    """Env ``i`` ends its episode every ``lengths[i]`` steps; raw reward 5 per step, clipped to 1."""

    def __init__(self, lengths=(2, 3, 5), obs_dtype=np.float64, action_space=None, reverse_rows=False) -> None:
        self.lengths = np.array(lengths)
        self.n = len(lengths)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(2,), dtype=obs_dtype)
        self.action_space = action_space or gym.spaces.Discrete(4)
        self.elapsed = np.zeros(self.n, dtype=np.int64)
        self.episodes = np.zeros(self.n, dtype=np.int64)
        self.reverse_rows = reverse_rows
        self.last_actions = None

    def _obs(self, ids):
        return np.stack([[self.episodes[i], self.elapsed[i]] for i in ids]).astype(self.observation_space.dtype)

    def _order(self, ids):
        return ids[::-1] if self.reverse_rows else ids

    def reset(self, env_id=None):
        ids = self._order(np.arange(self.n) if env_id is None else np.asarray(env_id))
        for i in ids:
            if self.elapsed[i]:
                self.episodes[i] += 1
            self.elapsed[i] = 0
        return self._obs(ids), {"env_id": ids}

    def step(self, actions, env_id):
        self.last_actions = actions
        self.elapsed += 1
        done = self.elapsed >= self.lengths
        ids = self._order(np.arange(self.n))
        info = {"env_id": ids, "reward": np.full(self.n, 5.0)}
        return self._obs(ids), np.ones(self.n, dtype=np.float32), done[ids], np.zeros(self.n, bool), info

    def close(self):
        pass


@pytest.mark.parametrize("reverse_rows", [False, True])
def test_finished_envs_restart_in_the_same_step_and_report_raw_scores(reverse_rows: bool) -> None:
    env = EnvPoolBatchedEnv(FakePool(reverse_rows=reverse_rows), num_envs=3)
    assert env.num_agents == 3 and is_natively_vectorized(env)
    obs, _ = env.reset()
    assert obs.dtype == np.float32 and env.observation_space.dtype == np.float32

    obs, rewards, terminated, truncated, infos = env.step(np.array([0, 1, 2]))
    assert rewards.tolist() == [1.0, 1.0, 1.0] and not any(infos)
    assert obs.tolist() == [[0, 1], [0, 1], [0, 1]], "rows follow info['env_id'], not EnvPool's output order"

    obs, rewards, terminated, truncated, infos = env.step(np.array([0, 1, 2]))
    assert terminated.tolist() == [True, False, False]
    assert obs[0].tolist() == [1, 0], "the finished env already shows its next episode's first observation"
    assert infos[0] == {"episode": {"r": 10.0, "l": 2}, "true_objective": 10.0}, "raw score, not clipped"
    assert infos[1] == {} and infos[2] == {}

    obs, rewards, terminated, truncated, infos = env.step(np.array([0, 1, 2]))
    assert obs[0].tolist() == [1, 1], "a normal step after the early reset, not a second reset"
    assert terminated.tolist() == [False, True, False]
    assert infos[0] == {}, "last step's episode report is cleared"
    assert infos[1]["episode"] == {"r": 15.0, "l": 3}


def test_actions_reach_the_pool_as_its_dtype_and_bounds() -> None:
    pool = FakePool()
    env = EnvPoolBatchedEnv(pool, num_envs=3)
    env.reset()
    env.step(np.array([[1], [2], [3]], dtype=np.int64))
    assert pool.last_actions.dtype == np.int32 and pool.last_actions.tolist() == [1, 2, 3]

    box = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
    pool = FakePool(action_space=box)
    env = EnvPoolBatchedEnv(pool, num_envs=3)
    env.reset()
    env.step(np.array([[2.0, -0.5], [0.0, -3.0], [0.5, 0.5]], dtype=np.float32))
    assert pool.last_actions.tolist() == [[1.0, -0.5], [0.0, -1.0], [0.5, 0.5]]


def test_sample_factory_2_names_map_to_this_family() -> None:
    names = {"envpool_atari_breakout": "Breakout-v5"}
    assert canonical_env_name("atari_breakout", "envpool_atari_", names) == "envpool_atari_breakout"
    assert canonical_env_name("envpool_atari_breakout", "envpool_atari_", names) == "envpool_atari_breakout"
    assert canonical_env_name("mujoco_ant", "envpool_atari_", names) == "mujoco_ant", "other prefixes untouched"
    rename = lambda name: canonical_env_name(name, "envpool_atari_", names)  # noqa: E731
    assert rewrite_env_arg(["--env=atari_breakout", "--x=1"], rename) == ["--env=envpool_atari_breakout", "--x=1"]
    assert rewrite_env_arg(["--env", "atari_breakout"], rename) == ["--env", "envpool_atari_breakout"]


def test_every_pool_gets_its_own_seed() -> None:
    from sample_factory.utils.attr_dict import AttrDict

    cfg = AttrDict(seed=3)
    seeds = {pool_seed(cfg, AttrDict(env_id=i)) for i in range(8)}
    assert len(seeds) == 8


def test_missing_envpool_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "envpool", None)  # makes `import envpool` fail
    with pytest.raises(MissingDependencyError, match=r"'envpool'.*sample-factory\[envpool\]"):
        require_envpool()
    assert envpool_available() is False


def test_atari_pool_skips_and_stacks_as_the_frame_flags_say(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict] = []
    monkeypatch.setattr(envpool_atari_params, "make_batched_env", lambda *args, **kwargs: calls.append(kwargs))
    make = envpool_atari_params.make_envpool_atari_env
    make("envpool_atari_pong", cfg=AttrDict(env_frameskip=2, env_framestack=3))
    make("envpool_atari_pong")  # no cfg: the family's defaults
    assert [(c["frame_skip"], c["stack_num"]) for c in calls] == [(2, 3), (4, 4)]
    with pytest.raises(ValueError, match="env_framestack"):
        make("envpool_atari_pong", cfg=AttrDict(env_frameskip=4, env_framestack=0))
