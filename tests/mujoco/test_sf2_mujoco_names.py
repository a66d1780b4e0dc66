"""Sample Factory 2's names of the MuJoCo family: specs by name, the env factory's parameters, flag hooks."""

from __future__ import annotations

import argparse

import pytest

from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.mujoco.mujoco_params import MUJOCO_DEFAULTS, add_mujoco_env_args, mujoco_override_defaults
from sf_examples.mujoco.mujoco_utils import MujocoSpec, make_mujoco_env, mujoco_env_by_name


def test_mujoco_env_by_name_gives_the_gymnasium_id() -> None:
    spec = mujoco_env_by_name("mujoco_halfcheetah")
    assert isinstance(spec, MujocoSpec) and spec.name == "mujoco_halfcheetah"
    assert spec.env_id.startswith("HalfCheetah-")
    with pytest.raises(UnknownEnvError, match="mujoco_halfcheetah"):
        mujoco_env_by_name("mujoco_cheetah")


def test_make_mujoco_env_reads_the_cfg_given_positionally() -> None:
    env = make_mujoco_env("mujoco_halfcheetah", AttrDict(env_frameskip=3), None, None)
    try:
        env.reset(seed=0)
        assert env.repeat == 3
    finally:
        env.close()


def test_flag_hooks_take_the_env_name_first() -> None:
    parser = argparse.ArgumentParser()
    add_mujoco_env_args("mujoco_ant", parser)
    mujoco_override_defaults("mujoco_ant", parser)
    assert parser.parse_args([]).mujoco_render_width == 320
    key = next(iter(MUJOCO_DEFAULTS))
    assert parser.get_default(key) == MUJOCO_DEFAULTS[key]
