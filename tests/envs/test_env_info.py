"""EnvInfo in Sample Factory 2's field order, and reading it from an env in this process or a spawned one."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.algo.utils.context import reset_global_context
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import (
    ENV_INFO_PROTOCOL_VERSION,
    EnvInfo,
    EnvInfoProcessError,
    extract_env_info,
    obtain_env_info_in_a_separate_process,
)
from sample_factory.envs.env_utils import RewardShapingInterface, UnknownEnvError, register_env
from sample_factory.utils.attr_dict import AttrDict

BOX = gym.spaces.Box(-1, 1, (3,), np.float32)
MIXED_TUPLE = gym.spaces.Tuple(
    [gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2, 2), np.float32), gym.spaces.MultiDiscrete([2, 5])]
)


@pytest.fixture(autouse=True)
def fresh_registry():
    reset_global_context()
    yield
    reset_global_context()


def _cfg(**flags) -> AttrDict:
    """A complete config (every flag) with ``flags`` set."""
    cfg = AttrDict(vars(default_cfg()))
    cfg.update(flags)
    return cfg


def test_positional_fields_follow_sample_factory_2_order():
    info = EnvInfo(BOX, gym.spaces.Discrete(4), 2, True, False, None, True, 4, {"kill": 1.0}, 7)
    assert info.num_agents == 2
    assert (info.gpu_actions, info.gpu_observations) == (True, False)
    assert info.all_discrete is True
    assert info.frameskip == 4
    assert info.reward_shaping_scheme == {"kill": 1.0}
    assert info.env_info_protocol_version == 7
    assert info.is_multiagent is True  # derived from num_agents > 1


def test_defaults_and_derived_fields():
    info = EnvInfo(obs_space=BOX, action_space=MIXED_TUPLE, num_agents=1)
    assert info.action_splits == [1, 4, 2]
    assert info.all_discrete is False
    assert (info.gpu_actions, info.gpu_observations, info.frameskip) == (False, False, 1)
    assert info.reward_shaping_scheme is None
    assert info.env_info_protocol_version == ENV_INFO_PROTOCOL_VERSION
    assert info.is_multiagent is False
    assert EnvInfo(BOX, gym.spaces.Discrete(2)).action_splits is None


def test_single_agent_multiagent_env_keeps_explicit_flag():
    assert EnvInfo(BOX, gym.spaces.Discrete(2), num_agents=1, is_multiagent=True).is_multiagent is True


def test_rejects_zero_agents():
    with pytest.raises(ValueError, match="num_agents=0"):
        EnvInfo(BOX, gym.spaces.Discrete(2), num_agents=0)


class _ShapedEnv(gym.Env, RewardShapingInterface):
    """Records in ``marker_dir`` which process created and closed it; its shaping scheme names that process."""

    def __init__(self, marker_dir: str | None = None) -> None:
        self.observation_space = BOX
        self.action_space = MIXED_TUPLE
        self.marker_dir = marker_dir
        self._touch("created")

    def _touch(self, what: str) -> None:
        if self.marker_dir:
            open(os.path.join(self.marker_dir, f"{what}_{os.getpid()}"), "w").close()

    def get_default_reward_shaping(self) -> dict:
        return {"pid": os.getpid()}

    def close(self) -> None:
        self._touch("closed")


def _make_shaped_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    return _ShapedEnv(cfg.marker_dir)


def _make_failing_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    raise UnknownEnvError(f"{full_env_name} cannot start: simulator binary missing")


def _make_env_with_unpicklable_error(full_env_name, cfg=None, env_config=None, render_mode=None):
    raise RuntimeError("bad state", lambda: None)  # a lambda cannot be pickled back to the parent


def _make_env_that_kills_its_process(full_env_name, cfg=None, env_config=None, render_mode=None):
    os._exit(3)


def test_extract_env_info_fills_sample_factory_2_fields():
    cfg = _cfg(env_frameskip=4, batched_sampling=True, env_gpu_actions=True, env_gpu_observations=False)
    info = extract_env_info(_ShapedEnv(), cfg)
    assert info.action_splits == [1, 4, 2]
    assert info.all_discrete is False
    assert (info.gpu_actions, info.gpu_observations, info.frameskip) == (True, False, 4)
    assert info.reward_shaping_scheme == {"pid": os.getpid()}
    assert info.env_info_protocol_version == ENV_INFO_PROTOCOL_VERSION


def test_separate_process_creates_and_closes_env_elsewhere(tmp_path):
    register_env("shaped_env", _make_shaped_env)  # only the parent's registry knows it: the child gets the context
    cfg = _cfg(env="shaped_env", marker_dir=str(tmp_path))
    info = obtain_env_info_in_a_separate_process(cfg)
    child_pid = info.reward_shaping_scheme["pid"]
    assert child_pid != os.getpid()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"closed_{child_pid}", f"created_{child_pid}"]
    assert info.action_space == MIXED_TUPLE and info.obs_space == BOX
    assert info.action_splits == [1, 4, 2]


def test_separate_process_reraises_child_exception_with_its_traceback():
    register_env("failing_env", _make_failing_env)
    with pytest.raises(UnknownEnvError) as exc_info:
        obtain_env_info_in_a_separate_process(_cfg(env="failing_env"))
    message = str(exc_info.value)
    assert "failing_env cannot start: simulator binary missing" in message
    assert "Traceback" in message and "_make_failing_env" in message


def test_separate_process_unpicklable_exception_arrives_as_text():
    register_env("unpicklable_error_env", _make_env_with_unpicklable_error)
    with pytest.raises(EnvInfoProcessError, match="RuntimeError") as exc_info:
        obtain_env_info_in_a_separate_process(_cfg(env="unpicklable_error_env"))
    assert "bad state" in str(exc_info.value) and "_make_env_with_unpicklable_error" in str(exc_info.value)


def test_separate_process_dying_child_is_reported():
    register_env("dying_env", _make_env_that_kills_its_process)
    with pytest.raises(EnvInfoProcessError, match=r"died \(exit code 3\)"):
        obtain_env_info_in_a_separate_process(_cfg(env="dying_env"))
