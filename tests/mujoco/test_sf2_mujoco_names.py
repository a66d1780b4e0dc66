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


def test_generic_tools_reach_the_family_hooks(clean_context) -> None:
    """``sample_factory.eval`` and the throughput tool register and parse through the family table."""
    from sample_factory.algo.utils.context import global_env_registry
    from sample_factory.cfg.arguments import parse_sf_args
    from sample_factory.envs.env_families import add_family_args, register_family_env
    from sf_examples.families import register_example_families

    register_example_families()
    parser, _ = parse_sf_args(["--env=mujoco_ant"], evaluation=True)
    add_family_args(parser, "mujoco_ant", evaluation=True)
    assert parser.parse_args(["--env=mujoco_ant"]).mujoco_render_width == 320
    register_family_env("mujoco_ant")
    assert "mujoco_ant" in global_env_registry()
