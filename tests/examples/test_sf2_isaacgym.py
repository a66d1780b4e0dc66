"""The Isaac Gym examples: importable without isaacgym, a clear ImportError when used, and the task adapter on a
scripted GPU-style vec task (torch tensors)."""

from __future__ import annotations

import argparse
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.utils import is_module_available
from sf_examples.isaacgym_examples import enjoy_isaacgym, train_isaacgym
from sf_examples.isaacgym_examples.train_isaacgym import (
    ISAACGYM_DEFAULTS,
    IsaacGymVecEnv,
    add_extra_params_func,
    ige_task_cfg_overrides,
    make_isaacgym_env,
    override_default_params_func,
    parse_isaacgym_cfg,
    register_isaacgym_custom_components,
)

needs_no_isaacgym = pytest.mark.skipif(is_module_available("isaacgym"), reason="isaacgym is installed here")


class VecTask:
    """IsaacGymEnvs' task API, scripted: 3 envs, env 1 times out at step 2, env 2 fails at step 2."""

    num_envs = 3
    observation_space = gym.spaces.Box(-1, 1, (5,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    def __init__(self) -> None:
        self.t = 0

    def reset(self) -> dict:
        return {"obs": torch.zeros(3, 5), "states": torch.ones(3, 7)}

    def step(self, actions):
        self.t += 1
        dones = torch.tensor([0, 1, 1]) if self.t == 2 else torch.zeros(3, dtype=torch.long)
        time_outs = torch.tensor([0, 1, 0]) if self.t == 2 else torch.zeros(3, dtype=torch.long)
        obs = {"obs": torch.full((3, 5), float(self.t)), "states": torch.ones(3, 7)}
        return obs, actions.sum(dim=1), dones, {"time_outs": time_outs}


@needs_no_isaacgym
@pytest.mark.parametrize(
    "call",
    [
        lambda: make_isaacgym_env("Ant", AttrDict()),
        register_isaacgym_custom_components,
        lambda: train_isaacgym.main(),
        lambda: enjoy_isaacgym.main(),
    ],
)
def test_using_the_examples_without_isaacgym_names_it_and_its_page(call) -> None:
    with pytest.raises(ImportError, match="isaacgym") as error:
        call()
    assert "https://developer.nvidia.com/isaac-gym" in str(error.value)


def test_vec_env_splits_dones_into_terminated_and_truncated() -> None:
    env = IsaacGymVecEnv(VecTask(), obs_key="obs")
    assert env.num_agents == 3 and env.is_multiagent
    obs, infos = env.reset()
    assert obs["obs"].shape == (3, 5) and len(infos) == 3
    env.step(torch.ones(3, 2))
    obs, rewards, terminated, truncated, _ = env.step(torch.ones(3, 2))
    assert obs["obs"][0, 0] == 2.0 and rewards.tolist() == [2.0, 2.0, 2.0]
    assert terminated.tolist() == [False, False, True] and truncated.tolist() == [False, True, False]


def test_vec_env_reads_the_chosen_observation_key() -> None:
    obs, _ = IsaacGymVecEnv(VecTask(), obs_key="states").reset()
    assert obs["obs"].shape == (3, 7)
    with pytest.raises(KeyError, match="--obs_key=pixels"):
        IsaacGymVecEnv(VecTask(), obs_key="pixels").reset()


def test_flags_defaults_and_task_overrides(monkeypatch) -> None:
    parser = argparse.ArgumentParser()
    add_extra_params_func(parser)
    override_default_params_func("Ant", parser)
    args = parser.parse_args(["--env_agents=4096"])
    assert args.env_agents == 4096 and parser.get_default("batch_size") == ISAACGYM_DEFAULTS["batch_size"]
    overrides = ige_task_cfg_overrides("Ant", AttrDict(env_agents=4096, seed=3, env_headless=True))
    assert overrides == ["task=Ant", "headless=True", "num_envs=4096", "seed=3"]
    monkeypatch.setattr(sys, "argv", ["train_isaacgym", "--env=Ant", "--experiment=x"])
    cfg = parse_isaacgym_cfg()
    assert cfg.batched_sampling is True and cfg.env_agents == -1
