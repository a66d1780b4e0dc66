"""Batched envs: sequential stacking with auto-reset, the tensor interface, and which envs stay natively vectorised."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from counting_envs import CountingEnv, TwoAgentEnv
from gymnasium import spaces

from sample_factory.algo.utils.context import reset_global_context
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_utils import register_env
from sample_factory.envs.make_env import (
    BatchedVecEnv,
    SequentialVectorizeWrapper,
    is_natively_vectorized,
    make_env_func_batched,
)
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.batched_cartpole import BatchedCartPole


# ---------------------------------------------------------------- SequentialVectorizeWrapper
def test_stacks_observations_rewards_and_flags_of_all_envs() -> None:
    vec = SequentialVectorizeWrapper([CountingEnv(tag=0, length=5), CountingEnv(tag=1, length=5)])
    obs, infos = vec.reset()
    assert vec.num_agents == 2 and vec.is_multiagent
    np.testing.assert_array_equal(obs, [[0, 0], [0, 1]])
    assert infos == [{"reset": True}, {"reset": True}]
    obs, rewards, terminated, truncated, _ = vec.step(np.array([2, 1]))
    np.testing.assert_array_equal(obs, [[1, 0], [1, 1]])
    assert rewards.dtype == np.float32 and rewards.tolist() == [1.0, 11.0]
    assert terminated.dtype == bool and not terminated.any() and not truncated.any()
    assert vec.envs[0].actions == [2] and vec.envs[1].actions == [1]
    assert all(type(a) is int for a in vec.envs[0].actions), "Discrete actions reach the env as Python ints"


def test_ended_env_is_reset_and_returns_the_first_observation_of_its_next_episode() -> None:
    short, long_ = CountingEnv(tag=0, length=1), CountingEnv(tag=1, length=3, truncate=True)
    vec = SequentialVectorizeWrapper([short, long_])
    vec.reset()
    obs, rewards, terminated, truncated, infos = vec.step([0, 0])
    assert terminated.tolist() == [True, False] and truncated.tolist() == [False, False]
    np.testing.assert_array_equal(obs[0], [0, 0])  # reset on the spot
    assert infos[0]["true_objective"] == 100.0, "the info is the one of the step that ended the episode"
    assert short.seeds == [None, None] and long_.seeds == [None]
    vec.step([0, 0])
    obs, _, terminated, truncated, infos = vec.step([0, 0])
    assert truncated.tolist() == [False, True] and terminated.tolist() == [True, False]
    assert infos[1]["episode_extra_stats"] == {"tag": 1.0}
    np.testing.assert_array_equal(obs[1], [0, 1])


def test_the_same_arrays_are_returned_every_step() -> None:
    vec = SequentialVectorizeWrapper([CountingEnv(), CountingEnv()])
    first = vec.reset()[0]
    obs, rewards, terminated, truncated, infos = vec.step([0, 0])
    again = vec.step([0, 0])
    assert obs is first and again[0] is obs and again[1] is rewards and again[2] is terminated
    assert again[3] is truncated and again[4] is infos


def test_dict_observations_are_stacked_per_key() -> None:
    vec = SequentialVectorizeWrapper([CountingEnv(tag=3, dict_obs=True), CountingEnv(tag=4, dict_obs=True)])
    obs, _ = vec.reset()
    assert set(obs) == {"pos", "level"}
    obs, *_ = vec.step([1, 1])
    np.testing.assert_array_equal(obs["pos"], [[1, 3], [1, 4]])
    assert obs["level"].tolist() == [3, 4] and obs["level"].shape == (2,)


def test_multi_agent_envs_contribute_one_actor_per_agent() -> None:
    pair, single = TwoAgentEnv(tag=1, length=2), CountingEnv(tag=7)
    vec = SequentialVectorizeWrapper([pair, single])
    assert vec.num_agents == 3
    vec.reset()
    obs, rewards, terminated, _, infos = vec.step(np.array([0, 1, 2]))
    assert pair.actions == [[0, 1]] and single.actions == [2]
    np.testing.assert_array_equal(obs, [[1, 10], [1, 11], [1, 7]])
    assert rewards.tolist() == [1.0, 2.0, 71.0]
    assert infos[1] == {"is_active": False} and infos[0] == {"is_active": True}
    obs, _, terminated, *_ = vec.step(np.array([0, 0, 0]))
    assert terminated.tolist() == [True, True, False]
    np.testing.assert_array_equal(obs[:2], [[0, 10], [0, 11]])


def test_int_seed_seeds_env_i_with_seed_plus_i() -> None:
    envs = [CountingEnv(), CountingEnv(), CountingEnv()]
    vec = SequentialVectorizeWrapper(envs)
    vec.reset(seed=40)
    assert [env.seeds for env in envs] == [[40], [41], [42]]
    vec.reset(seed=[7, None, 9])
    assert [env.seeds[-1] for env in envs] == [7, None, 9]
    with pytest.raises(ValueError, match="2 seeds for 3 envs"):
        vec.reset(seed=[1, 2])


def test_tuple_actions_are_cut_into_parts_per_env() -> None:
    space = spaces.Tuple([spaces.Discrete(2), spaces.Box(-1, 1, (2,))])
    env = CountingEnv(action_space=space)
    vec = SequentialVectorizeWrapper([env])
    vec.reset()
    vec.step(np.array([[1.0, 0.5, -0.5]]))
    (discrete, box) = env.actions[0]
    assert discrete == 1 and np.allclose(box, [0.5, -0.5])


def test_envs_with_different_spaces_or_none_are_refused() -> None:
    with pytest.raises(ValueError, match="env 1 has observation_space"):
        SequentialVectorizeWrapper([CountingEnv(), CountingEnv(dict_obs=True)])
    with pytest.raises(ValueError, match="at least one env"):
        SequentialVectorizeWrapper([])


def test_closes_every_env() -> None:
    envs = [CountingEnv(), CountingEnv()]
    SequentialVectorizeWrapper(envs).close()
    assert all(env.closed for env in envs)


# ---------------------------------------------------------------- BatchedVecEnv
def test_batched_vec_env_gives_tensors_that_share_memory_with_the_stacked_arrays() -> None:
    vec = SequentialVectorizeWrapper([CountingEnv(tag=0), CountingEnv(tag=1)])
    env = BatchedVecEnv(vec)
    obs, _ = env.reset()
    assert set(obs) == {"obs"} and obs["obs"].shape == (2, 2)
    obs, rewards, terminated, truncated, _ = env.step(torch.tensor([1, 2]))
    assert rewards.dtype == torch.float32 and terminated.dtype == torch.bool and truncated.dtype == torch.bool
    assert rewards.tolist() == [1.0, 11.0]
    assert obs["obs"].data_ptr() == vec._obs.ctypes.data, "no copy of the observations"
    obs2, rewards2, *_ = env.step(torch.tensor([0, 0]))
    assert obs2["obs"] is obs["obs"] and rewards2 is rewards, "the same tensor views are reused every step"
    assert vec.envs[0].actions == [1, 0] and vec.envs[1].actions == [2, 0]


def test_batched_vec_env_wraps_a_plain_env_into_a_batch_of_one() -> None:
    env = BatchedVecEnv(gym.make("CartPole-v1"))
    assert isinstance(env.env, SequentialVectorizeWrapper) and env.num_agents == 1
    obs, _ = env.reset(seed=0)
    assert obs["obs"].shape == (1, 4)
    obs, rewards, terminated, truncated, infos = env.step(torch.tensor([1]))
    assert rewards.tolist() == [1.0] and terminated.shape == (1,) and len(infos) == 1
    env.close()


def test_natively_vectorised_env_is_used_as_is_and_gets_numpy_or_device_actions() -> None:
    native = BatchedCartPole(num_envs=4)
    received = []
    step = native.step
    native.step = lambda actions: received.append(actions) or step(actions)
    env = BatchedVecEnv(native)
    assert env.env is native and env.num_agents == 4 and env.envs == [native]
    env.reset(seed=1)
    obs, rewards, *_ = env.step(torch.tensor([0, 1, 0, 1]))
    assert isinstance(received[-1], np.ndarray) and received[-1].tolist() == [0, 1, 0, 1]
    assert obs["obs"].shape == (4, 4) and rewards.tolist() == [1.0] * 4
    env = BatchedVecEnv(native, actions_device="cpu")
    env.step(np.array([1, 1, 1, 1]))
    assert isinstance(received[-1], torch.Tensor) and received[-1].device.type == "cpu"


def test_per_agent_dict_observations_of_a_native_env_are_stacked() -> None:
    class DictPairEnv(TwoAgentEnv):
        def __init__(self, tag: int) -> None:
            super().__init__(tag=tag)
            self.observation_space = spaces.Dict({"pos": spaces.Box(-99, 99, (2,), dtype=np.float32)})

        def _obs(self) -> list[dict]:
            return [{"pos": pos} for pos in super()._obs()]

    env = BatchedVecEnv(DictPairEnv(tag=2))
    obs, _ = env.reset()
    assert env.env.__class__ is DictPairEnv
    np.testing.assert_array_equal(obs["pos"].numpy(), [[0, 20], [0, 21]])


def test_native_recognition_needs_several_agents_and_plain_action_rows() -> None:
    assert is_natively_vectorized(BatchedCartPole(num_envs=2))
    assert not is_natively_vectorized(CountingEnv())
    pair = TwoAgentEnv()
    pair.action_space = spaces.Tuple([spaces.Discrete(2), spaces.Discrete(2)])
    assert not is_natively_vectorized(pair), "Tuple actions must be cut per agent, so it is stepped sequentially"
    assert isinstance(BatchedVecEnv(pair).env, SequentialVectorizeWrapper)


# ---------------------------------------------------------------- make_env_func_batched
def _cfg(env: str, **overrides):
    cfg = default_cfg(env=env)
    for name, value in overrides.items():
        setattr(cfg, name, value)
    return cfg


@pytest.fixture
def registry():
    reset_global_context()
    created: list = []

    def make_counting(name, cfg=None, env_config=None, render_mode=None):
        env = CountingEnv(tag=env_config.env_id if env_config else -1)
        env.env_config = env_config
        created.append(env)
        return env

    register_env("counting", make_counting)
    register_env("native_cartpole", lambda name, cfg=None, env_config=None, render_mode=None: BatchedCartPole(3))
    yield created
    reset_global_context()


def test_split_envs_get_consecutive_configs_and_are_stacked(registry) -> None:
    cfg = default_cfg(env="counting")
    env = make_env_func_batched(cfg, AttrDict(worker_index=1, vector_index=4, env_id=12, extra="x"), num_envs=3)
    assert isinstance(env.env, SequentialVectorizeWrapper) and env.num_agents == 3
    configs = [e.env_config for e in registry]
    assert [(c.worker_index, c.vector_index, c.env_id, c.extra) for c in configs] == [
        (1, 4, 12, "x"),
        (1, 5, 13, "x"),
        (1, 6, 14, "x"),
    ]
    obs, _ = env.reset()
    assert obs["obs"][:, 1].tolist() == [12, 13, 14]


def test_one_env_by_default_as_evaluation_scripts_expect(registry) -> None:
    env = make_env_func_batched(default_cfg(env="counting"), AttrDict(worker_index=0, vector_index=0, env_id=0))
    assert env.num_agents == 1 and len(registry) == 1


def test_a_native_env_alone_in_its_split_keeps_its_fast_path(registry) -> None:
    cfg = default_cfg(env="native_cartpole")
    alone = make_env_func_batched(cfg, AttrDict(worker_index=0, vector_index=0, env_id=0))
    assert isinstance(alone.env, BatchedCartPole) and alone.num_agents == 3
    several = make_env_func_batched(cfg, AttrDict(worker_index=0, vector_index=0, env_id=0), num_envs=2)
    assert isinstance(several.env, SequentialVectorizeWrapper) and several.num_agents == 6
    obs, _ = several.reset(seed=0)
    obs, rewards, *_ = several.step(torch.zeros(6, dtype=torch.int64))
    assert obs["obs"].shape == (6, 4) and rewards.tolist() == [1.0] * 6


def test_gpu_actions_are_refused_for_envs_stepped_one_by_one_and_given_to_native_ones(registry) -> None:
    cfg = _cfg("counting", env_gpu_actions=True, device="cpu")
    with pytest.raises(ValueError, match="--env_gpu_actions=True but env 'counting' is not natively vectorised"):
        make_env_func_batched(cfg, AttrDict(worker_index=0, vector_index=0, env_id=0), num_envs=2)
    assert registry and all(env.closed for env in registry), "envs created before the error are closed"
    native = make_env_func_batched(
        _cfg("native_cartpole", env_gpu_actions=True, device="cpu"),
        AttrDict(worker_index=0, vector_index=0, env_id=0),
    )
    assert native.actions_device == torch.device("cpu")
