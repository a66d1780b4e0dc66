"""Env registry, optional interfaces and dependency errors."""

from __future__ import annotations

import logging

import gymnasium as gym
import pytest

from sample_factory.algo.utils.context import global_env_registry
from sample_factory.envs.env_utils import (
    MissingDependencyError,
    RewardShapingInterface,
    TrainingInfoInterface,
    UnknownEnvError,
    find_training_info_interface,
    find_wrapper_interface,
    get_default_reward_shaping,
    get_make_env_func,
    num_env_steps,
    register_env,
    register_with_func,
    require_optional_module,
    vizdoom_available,
)
from sample_factory.utils.utils import log

from .fake_envs import ScriptedEnv


def make_a(full_env_name, cfg=None, env_config=None, render_mode=None):
    return "a"


def make_b(full_env_name, cfg=None, env_config=None, render_mode=None):
    return "b"


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_register_and_lookup():
    register_env("env_a", make_a)
    assert global_env_registry()["env_a"] is make_a
    assert get_make_env_func("env_a") is make_a


def test_reregistering_warns_and_replaces():
    handler = _ListHandler()
    log.addHandler(handler)
    try:
        register_env("env_a", make_a)
        assert handler.messages == []
        register_env("env_a", make_b)
    finally:
        log.removeHandler(handler)
    assert get_make_env_func("env_a") is make_b
    assert len(handler.messages) == 1 and "env_a" in handler.messages[0]


def test_register_rejects_non_callable():
    with pytest.raises(TypeError, match="needs a callable"):
        register_env("bad", "not a function")


def test_unknown_env_message_lists_names_and_how_to_fix():
    register_env("env_b", make_b)
    register_env("env_a", make_a)
    with pytest.raises(UnknownEnvError) as exc_info:
        get_make_env_func("nope")
    message = str(exc_info.value)
    assert "'nope'" in message
    assert "env_a, env_b" in message
    assert "python -m sf_examples.train_gym_env" in message
    assert "register_env" in message
    assert isinstance(exc_info.value, ValueError)


class ShapedEnv(ScriptedEnv, RewardShapingInterface, TrainingInfoInterface):
    def __init__(self) -> None:
        ScriptedEnv.__init__(self)
        TrainingInfoInterface.__init__(self)
        self.shaping = {"kill": 1.0}

    def get_default_reward_shaping(self):
        return dict(self.shaping)

    def set_reward_shaping(self, reward_shaping, agent_idx):
        self.shaping = reward_shaping


def register_env_a() -> None:
    """A ``--registration_func`` target for the tests below."""
    register_env("env_a", make_a)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("register_env_a", "must look like module:function"),
        ("no_such_module_xyz:register", "cannot import module 'no_such_module_xyz'"),
        (f"{__name__}:no_such_function", "has no function 'no_such_function'"),
        (f"{__name__}:register_env_a", "did not register --env=env_b"),
    ],
)
def test_bad_registration_func_says_what_to_fix(spec: str, message: str) -> None:
    with pytest.raises(UnknownEnvError, match=message):
        register_with_func(spec, "env_b")


def test_registration_func_registers_env() -> None:
    register_with_func(f"{__name__}:register_env_a", "env_a")
    assert get_make_env_func("env_a") is make_a


def test_interfaces_found_through_wrapper_chain():
    inner = ShapedEnv()
    wrapped = gym.wrappers.TimeLimit(gym.wrappers.TransformReward(inner, lambda r: min(max(r, -1), 1)), 10)
    assert find_wrapper_interface(wrapped, RewardShapingInterface) is inner
    found = find_training_info_interface(wrapped)
    assert found is inner
    found.set_training_info({"approx_total_training_steps": 123})
    assert inner.training_info == {"approx_total_training_steps": 123}


def test_interface_missing_returns_none():
    wrapped = gym.wrappers.TimeLimit(ScriptedEnv(), 10)
    assert find_wrapper_interface(wrapped, RewardShapingInterface) is None
    assert find_training_info_interface(wrapped) is None


def test_interface_on_a_wrapper_is_found_before_inner_env():
    class InfoWrapper(gym.Wrapper, TrainingInfoInterface):
        def __init__(self, env):
            gym.Wrapper.__init__(self, env)
            TrainingInfoInterface.__init__(self)

    inner = ShapedEnv()
    wrapper = InfoWrapper(inner)
    assert find_training_info_interface(gym.wrappers.TimeLimit(wrapper, 5)) is wrapper


def test_reward_shaping_interface_requires_implementation():
    class Incomplete(RewardShapingInterface):
        pass

    with pytest.raises(NotImplementedError, match="Incomplete"):
        Incomplete().get_default_reward_shaping()


def test_require_optional_module_returns_installed_module():
    assert require_optional_module("json", extra="none", what="test").dumps([1]) == "[1]"


def test_require_optional_module_names_the_extra():
    with pytest.raises(MissingDependencyError) as exc_info:
        require_optional_module("no_such_module_xyz", extra="vizdoom", what="VizDoom envs")
    message = str(exc_info.value)
    assert 'pip install "sample-factory[vizdoom]"' in message
    assert "VizDoom envs" in message and "no_such_module_xyz" in message
    assert isinstance(exc_info.value, ImportError)


class _ShapingWrapper(gym.Wrapper, RewardShapingInterface):
    def get_default_reward_shaping(self):
        return {"kill": 1.0, "death": -1.0}

    def set_reward_shaping(self, reward_shaping, agent_idx):
        pass


def test_default_reward_shaping_found_through_wrappers():
    env = gym.wrappers.TimeLimit(_ShapingWrapper(ScriptedEnv()), max_episode_steps=5)
    assert get_default_reward_shaping(env) == {"kill": 1.0, "death": -1.0}


def test_default_reward_shaping_none_without_interface():
    assert get_default_reward_shaping(gym.wrappers.TimeLimit(ScriptedEnv(), max_episode_steps=5)) is None


def test_num_env_steps_sums_frames_per_agent_default_one():
    assert num_env_steps([{"num_frames": 4}, {"num_frames": 4}, {}]) == 9
    assert num_env_steps([{}]) == 1
    assert num_env_steps([]) == 0


def test_vizdoom_available_matches_installation_without_importing_it(monkeypatch):
    import importlib.util
    import sys

    monkeypatch.delitem(sys.modules, "vizdoom", raising=False)
    installed = importlib.util.find_spec("vizdoom") is not None
    assert vizdoom_available() is installed
    assert "vizdoom" not in sys.modules
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert vizdoom_available() is False
