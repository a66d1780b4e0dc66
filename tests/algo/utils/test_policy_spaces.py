"""PolicySpaces: which policies act for which agents when agents have different spaces, and the errors that say
how to fix flags that cannot work."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.algo.utils.policy_spaces import PolicySpaces, PolicySpacesError
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo

SMALL = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
LARGE = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
MOVE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
STEP = gym.spaces.Discrete(5)


def mixed_info(num_agents: int = 3) -> EnvInfo:
    """Agents 0 and 2 are of one kind (SMALL, MOVE), agent 1 of another (LARGE, STEP)."""
    obs = [SMALL, LARGE, SMALL][:num_agents]
    act = [MOVE, STEP, MOVE][:num_agents]
    return EnvInfo(SMALL, MOVE, num_agents=num_agents, agent_obs_spaces=obs, agent_action_spaces=act)


def cfg_with(**flags):
    cfg = default_cfg(env="x")
    for name, value in flags.items():
        setattr(cfg, name, value)
    return cfg


def test_agents_alike_share_every_policy_as_before() -> None:
    info = EnvInfo(SMALL, STEP, num_agents=3)
    spaces = PolicySpaces(cfg_with(num_policies=4), info)
    assert not spaces.heterogeneous and spaces.num_groups == 1
    assert spaces.agent_candidates == [[0, 1, 2, 3]] * 3
    assert spaces.env_info_of(3) is info


def test_policies_are_dealt_to_the_kinds_of_agents_round_robin() -> None:
    spaces = PolicySpaces(cfg_with(num_policies=4), mixed_info())
    assert spaces.agent_group == [0, 1, 0]
    assert spaces.policy_group == [0, 1, 0, 1]
    assert spaces.agent_candidates == [[0, 2], [1, 3], [0, 2]]
    evader = spaces.env_info_of(1)
    assert evader.obs_space == LARGE and evader.action_space == STEP and evader.all_discrete
    assert not evader.heterogeneous and evader.num_agents == 3
    assert spaces.same_spaces(0, 2) and not spaces.same_spaces(0, 1)


def test_fewer_policies_than_kinds_of_agents_names_the_fix() -> None:
    with pytest.raises(PolicySpacesError, match=r"--num_policies=2.*--agent_to_policy"):
        PolicySpaces(cfg_with(num_policies=1), mixed_info())


def test_batched_sampling_is_refused_for_agents_of_different_spaces() -> None:
    with pytest.raises(PolicySpacesError, match="--batched_sampling=False"):
        PolicySpaces(cfg_with(num_policies=2, batched_sampling=True), mixed_info())


def test_agent_to_policy_fixes_each_agents_policy() -> None:
    spaces = PolicySpaces(cfg_with(num_policies=3, agent_to_policy="0,1,2"), mixed_info())
    assert spaces.agent_candidates == [[0], [1], [2]]
    assert spaces.policy_group == [0, 1, 0]


@pytest.mark.parametrize(
    ("mapping", "num_policies", "message"),
    [
        ("0,0,0", 2, "different spaces"),  # one policy for agents of two kinds
        ("0,1,0", 3, r"no agent to policies \[2\]"),
        ("0,1", 2, "names 2 policies but the env has 3 agents"),
        ("0,x,1", 2, "not a comma-separated list"),
        ("0,5,0", 2, r"policies \[5\] outside 0..1"),
    ],
)
def test_bad_agent_to_policy_is_explained(mapping: str, num_policies: int, message: str) -> None:
    with pytest.raises(PolicySpacesError, match=message):
        PolicySpaces(cfg_with(num_policies=num_policies, agent_to_policy=mapping), mixed_info())


def test_env_info_reads_per_agent_spaces_and_collapses_equal_ones() -> None:
    from sample_factory.envs.env_info import extract_env_info

    class TwoKinds(gym.Env):
        num_agents, is_multiagent = 2, True
        observation_spaces = [SMALL, LARGE]
        action_spaces = {"a": MOVE, "b": STEP}  # a mapping in agent order, as PettingZoo keeps them
        observation_space, action_space = SMALL, MOVE

    info = extract_env_info(TwoKinds(), default_cfg(env="x"))
    assert info.agent_obs_spaces == [SMALL, LARGE] and info.agent_action_spaces == [MOVE, STEP]

    class Alike(TwoKinds):
        observation_spaces = [SMALL, SMALL]
        action_spaces = [MOVE, MOVE]

    alike = extract_env_info(Alike(), default_cfg(env="x"))
    assert alike.agent_obs_spaces is None and not alike.heterogeneous

    class Short(TwoKinds):
        observation_spaces = [SMALL]

    with pytest.raises(ValueError, match="one gymnasium space per agent"):
        extract_env_info(Short(), default_cfg(env="x"))
