"""The Gymnasium env family: registration, creation, error messages and default flags."""

from __future__ import annotations

import argparse
import logging

import numpy as np
import pytest

from sample_factory.algo.utils.context import global_env_registry
from sample_factory.cfg.validation import ConfigError
from sample_factory.envs.create_env import create_env, make_env_config
from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.envs.env_wrappers import MaxAndSkipEnv, RecordEpisodeStatistics
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.utils import log
from sf_examples.gym.gym_utils import (
    GYM_DEFAULTS,
    add_gym_env_args,
    gym_override_defaults,
    make_gym_env_func,
    register_gym_env,
    wrap_gym_env,
)

from .fake_envs import ScriptedEnv


def test_register_and_create_cartpole():
    register_gym_env("CartPole-v1")
    assert global_env_registry()["CartPole-v1"] is make_gym_env_func
    env = create_env("CartPole-v1", cfg=AttrDict(), env_config=make_env_config(0, 0, 0))
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == (4,) and env.action_space.n == 2
    obs, reward, terminated, truncated, _ = env.step(0)
    assert obs.shape == (4,) and reward == 1.0
    env.close()


def test_misspelled_id_suggests_close_match():
    with pytest.raises(UnknownEnvError) as exc_info:
        register_gym_env("CartPol-v1")
    message = str(exc_info.value)
    assert "Did you mean" in message and "CartPole-v1" in message
    assert "register_env" in message and "gymnasium.register" in message
    assert "CartPol-v1" not in global_env_registry()


def test_unknown_module_prefix_is_reported():
    with pytest.raises(UnknownEnvError, match="no_such_pkg_xyz"):
        register_gym_env("no_such_pkg_xyz:Foo-v0")


def test_module_prefix_imports_then_registers():
    register_gym_env("gymnasium.envs.classic_control:Acrobot-v1")
    env = create_env("gymnasium.envs.classic_control:Acrobot-v1")
    assert env.observation_space.shape == (6,)
    env.close()


def test_record_episode_statistics_follows_cfg():
    plain = make_gym_env_func("CartPole-v1", cfg=AttrDict(use_record_episode_statistics=False))
    recorded = make_gym_env_func("CartPole-v1", cfg=AttrDict(use_record_episode_statistics=True))
    assert isinstance(recorded, RecordEpisodeStatistics)
    assert not isinstance(plain, RecordEpisodeStatistics)
    recorded.reset(seed=1)
    info, steps, done = {}, 0, False
    while not done:
        _, _, terminated, truncated, info = recorded.step(0)
        steps += 1
        done = terminated or truncated
    assert info["episode"] == {"r": float(steps), "l": steps}


def test_render_mode_passed_to_gymnasium():
    pytest.importorskip("pygame", reason="CartPole renders with pygame")
    env = make_gym_env_func("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.ndim == 3
    env.close()


def _parser_with_flags(names: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    for name in names:
        parser.add_argument(f"--{name}", default="library-default")
    return parser


def test_override_defaults_applies_gym_defaults():
    parser = _parser_with_flags(list(GYM_DEFAULTS) + ["num_workers"])
    add_gym_env_args("CartPole-v1", parser)
    gym_override_defaults("CartPole-v1", parser)
    cfg = parser.parse_args([])
    assert cfg.encoder_mlp_layers == [64, 64]
    assert cfg.nonlinearity == "tanh" and cfg.use_rnn is False
    assert cfg.num_workers == "library-default"
    assert parser.parse_args(["--rollout", "64"]).rollout == "64"


def test_override_defaults_skips_and_reports_undeclared_flags():
    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    parser = _parser_with_flags(["rollout"])
    log.addHandler(handler)
    try:
        gym_override_defaults("CartPole-v1", parser)
    finally:
        log.removeHandler(handler)
    cfg = parser.parse_args([])
    assert cfg.rollout == GYM_DEFAULTS["rollout"]
    assert not hasattr(cfg, "encoder_mlp_layers")
    assert len(messages) == 1 and "encoder_mlp_layers" in messages[0]


# ---- the standard env flags in the gym family ---------------------------------------------------------------------


def _env_cfg(**overrides) -> AttrDict:
    return AttrDict({"env": "scripted", "env_frameskip": 1, "env_framestack": 1, "pixel_format": "CHW", **overrides})


def test_frameskip_repeats_actions_of_a_gym_env():
    env = make_gym_env_func("CartPole-v1", cfg=_env_cfg(env_frameskip=3))
    env.reset(seed=0)
    _, reward, _, _, info = env.step(0)
    assert reward == 3.0 and info["num_frames"] == 3  # three CartPole steps for one agent step
    env.close()


def test_frameskip_of_one_adds_no_wrapper():
    env = ScriptedEnv(obs_shape=(3,))
    assert wrap_gym_env(env, _env_cfg()) is env


def test_frameskip_on_images_max_pools_like_atari():
    env = wrap_gym_env(ScriptedEnv(obs_shape=(4, 6, 3)), _env_cfg(env_frameskip=2, pixel_format="HWC"))
    assert isinstance(env, MaxAndSkipEnv)


def test_channels_last_images_become_chw_by_default():
    env = wrap_gym_env(ScriptedEnv(obs_shape=(4, 6, 3)), _env_cfg())
    assert env.observation_space.shape == (3, 4, 6)
    obs, _ = env.reset()
    assert obs.shape == (3, 4, 6)


def test_hwc_keeps_the_envs_layout():
    env = ScriptedEnv(obs_shape=(4, 6, 3))
    assert wrap_gym_env(env, _env_cfg(pixel_format="HWC")) is env


def test_images_already_channels_first_are_left_alone():
    env = ScriptedEnv(obs_shape=(3, 64, 64))
    assert wrap_gym_env(env, _env_cfg()).observation_space.shape == (3, 64, 64)


def test_framestack_stacks_chw_frames():
    env = wrap_gym_env(ScriptedEnv(obs_shape=(4, 6, 3)), _env_cfg(env_framestack=4))
    assert env.observation_space.shape == (12, 4, 6)
    obs, _ = env.reset()
    obs, *_ = env.step(0)
    assert obs.shape == (12, 4, 6)
    assert [int(obs[3 * i, 0, 0]) for i in range(4)] == [0, 0, 0, 1]  # oldest first, reset frame repeated


def test_framestack_of_vector_observations_is_refused():
    with pytest.raises(ConfigError, match=r"--env_framestack=4 needs image observations .* pass --env_framestack=1"):
        wrap_gym_env(ScriptedEnv(obs_shape=(5,)), _env_cfg(env_framestack=4))


def test_framestack_of_hwc_images_is_refused():
    with pytest.raises(ConfigError, match="--pixel_format=HWC keeps the env's channels-last images"):
        wrap_gym_env(ScriptedEnv(obs_shape=(4, 6, 3)), _env_cfg(env_framestack=2, pixel_format="HWC"))
