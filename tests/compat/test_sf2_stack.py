"""The package on the oldest supported stack (torch 2.1; gymnasium 0.29 and numpy 1.26, which Sample Factory 2.1.1
projects pin) as on today's.

``make test-compat`` runs these, with the core subset of the suite, in a venv with those versions; ``make test``
runs them with the newest ones.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import warnings

import gymnasium as gym
import numpy as np
import pytest
from packaging.requirements import Requirement

from sample_factory.envs.env_info import env_attribute, get_multiagent_info

SETUP_PY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "setup.py")


def _core_requirements() -> dict[str, Requirement]:
    """``core_requirements`` of setup.py, read without running it."""
    with open(SETUP_PY, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "core_requirements":
            return {Requirement(r).name: Requirement(r) for r in ast.literal_eval(node.value)}
    raise AssertionError("setup.py has no core_requirements list")


@pytest.mark.parametrize("name", ["gymnasium", "numpy", "torch"])
def test_the_installed_version_is_inside_the_declared_range(name: str):
    requirement = _core_requirements()[name]
    installed = importlib.metadata.version(name)
    assert requirement.specifier.contains(installed, prereleases=True), f"{name} {installed} outside {requirement}"


@pytest.mark.parametrize("version", ["0.28.1", "0.29.1", "1.0.0", "1.4.0"])
def test_the_declared_gymnasium_range_admits_sf2s_and_todays(version: str):
    assert _core_requirements()["gymnasium"].specifier.contains(version)


@pytest.mark.parametrize("version", ["1.26.4", "2.4.0"])
def test_the_declared_numpy_range_admits_sf2s_and_todays(version: str):
    assert _core_requirements()["numpy"].specifier.contains(version)


class _MultiAgentEnv(gym.Env):
    """Declares the multi-agent attributes that wrappers around it must not hide."""

    num_agents = 3
    is_multiagent = True
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(2, dtype=np.float32), 0.0, False, False, {}


def test_env_attributes_are_read_through_gymnasium_wrappers_without_a_warning():
    wrapped = gym.wrappers.TimeLimit(gym.wrappers.TransformReward(_MultiAgentEnv(), lambda r: r), 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # gymnasium 0.x warns when a wrapper forwards a read to the env inside
        assert get_multiagent_info(wrapped) == (True, 3)
        assert env_attribute(wrapped, "no_such_attribute", "default") == "default"
        assert env_attribute(wrapped, "spec") is wrapped.spec
