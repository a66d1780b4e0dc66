"""A multi-agent env is recognised through any chain of wrappers, and trains through the public entry point.

Gymnasium 1.x wrappers do not forward attribute reads to the env inside, so ``num_agents`` / ``is_multiagent``
declared by a user's env are invisible on the outer wrapper; read naively, the env is taken for a single-agent one
and the run fails on its per-agent lists.
"""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest
from sf_run import run_python

from sample_factory.algo.utils.make_env import get_multiagent_info, is_multiagent_env
from sample_factory.envs.env_info import env_attribute, extract_env_info
from sample_factory.utils.attr_dict import AttrDict

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "wrapped_multi_agent_train.py")
CFG = AttrDict(batched_sampling=False, env_gpu_actions=False, env_gpu_observations=False, env_frameskip=1)


class ThreeAgents(gym.Env):
    num_agents = 3
    is_multiagent = True
    observation_space = gym.spaces.Box(0.0, 1.0, shape=(5,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)


class PlainWrapper(gym.Wrapper):
    pass


class NotGymnasiumWrapper:
    """A wrapper of the user's own that is no gymnasium class and forwards nothing but ``.env``."""

    def __init__(self, env: object) -> None:
        self.env = env


class OneAgentView(gym.Wrapper):
    """A wrapper that declares its own agent count: the outermost declaration wins."""

    num_agents = 1
    is_multiagent = False


def test_attributes_found_through_nested_gymnasium_wrappers() -> None:
    env = PlainWrapper(PlainWrapper(ThreeAgents()))
    assert not hasattr(env, "num_agents") or env.num_agents == 3  # gymnasium >= 1.0: not forwarded
    assert get_multiagent_info(env) == (True, 3)
    assert is_multiagent_env(env) is True


def test_attributes_found_through_a_wrapper_of_another_kind() -> None:
    env = NotGymnasiumWrapper(NotGymnasiumWrapper(PlainWrapper(ThreeAgents())))
    assert get_multiagent_info(env) == (True, 3)


def test_outermost_declaration_wins_and_plain_envs_are_single_agent() -> None:
    assert get_multiagent_info(OneAgentView(ThreeAgents())) == (False, 1)
    assert get_multiagent_info(PlainWrapper(gym.make("CartPole-v1"))) == (False, 1)
    assert env_attribute(PlainWrapper(ThreeAgents()), "no_such_attribute", "fallback") == "fallback"


def test_env_info_of_a_wrapped_multi_agent_env() -> None:
    info = extract_env_info(PlainWrapper(ThreeAgents()), CFG)
    assert (info.num_agents, info.is_multiagent) == (3, True)
    assert info.obs_space.shape == (5,)


def test_bad_agent_count_names_the_protocol() -> None:
    class Broken(ThreeAgents):
        num_agents = 0

    with pytest.raises(ValueError, match="num_agents=0"):
        get_multiagent_info(PlainWrapper(Broken()))


@pytest.mark.parametrize("mode", ["serial", "parallel_batched"])
def test_wrapped_multi_agent_env_trains(tmp_path, mode: str) -> None:
    flags = ["--serial_mode=True"] if mode == "serial" else ["--batched_sampling=True"]
    result = run_python(
        [
            SCRIPT,
            f"--train_dir={tmp_path}",
            f"--experiment={mode}",
            "--train_for_env_steps=1000",
            "--device=cpu",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--rollout=8",
            "--batch_size=64",
            "--decorrelate_experience_max_seconds=0",
            *flags,
        ],
        timeout=240,
    )
    result.assert_trained(min_samples=1000)
