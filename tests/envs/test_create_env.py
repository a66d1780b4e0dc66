"""create_env looks the name up and passes every argument through."""

from __future__ import annotations

import pytest

from sample_factory.envs.create_env import create_env, make_env_config
from sample_factory.envs.env_utils import UnknownEnvError, register_env
from sample_factory.utils.attr_dict import AttrDict


def test_make_env_config_fields():
    env_config = make_env_config(worker_index=2, vector_index=3, env_id=11, level="maze")
    assert isinstance(env_config, AttrDict)
    assert (env_config.worker_index, env_config.vector_index, env_config.env_id) == (2, 3, 11)
    assert env_config.level == "maze"


def test_create_env_passes_arguments_through():
    calls = []

    def make_recording_env(full_env_name, cfg=None, env_config=None, render_mode=None):
        calls.append((full_env_name, cfg, env_config, render_mode))
        return "env"

    register_env("recorder", make_recording_env)
    cfg = AttrDict(seed=1)
    env_config = make_env_config(0, 1, 5)
    assert create_env("recorder", cfg=cfg, env_config=env_config, render_mode="rgb_array") == "env"
    assert calls == [("recorder", cfg, env_config, "rgb_array")]
    assert calls[0][2] is env_config


def test_factory_with_renamed_parameters_gets_every_argument_positionally():
    """Sample Factory 2 scripts name their factory parameters ``_cfg`` / ``_env_config``: keywords would break them."""
    calls = []

    def make_env(full_env_name, _cfg=None, _env_config=None, render_mode=None):
        calls.append((full_env_name, _cfg, _env_config, render_mode))
        return "env"

    register_env("renamed", make_env)
    cfg, env_config = AttrDict(seed=3), make_env_config(1, 0, 7)
    assert create_env("renamed", cfg=cfg, env_config=env_config, render_mode="human") == "env"
    assert calls == [("renamed", cfg, env_config, "human")]


def test_factory_without_keyword_names_at_all():
    register_env("positional_only", lambda name, c, e, r, /: (name, c, e, r))
    assert create_env("positional_only", cfg="c", env_config="e") == ("positional_only", "c", "e", None)


def test_create_env_defaults_to_none():
    calls = []
    register_env("recorder", lambda name, cfg=None, env_config=None, render_mode=None: calls.append(env_config))
    create_env("recorder")
    assert calls == [None]


def test_create_env_unknown_name():
    with pytest.raises(UnknownEnvError, match="train_gym_env"):
        create_env("missing_env")
