"""Sample Factory 2's names of the Atari family: specs by name, the env factory's parameters, flag hooks."""

from __future__ import annotations

import argparse

import pytest

from sample_factory.algo.utils.context import global_env_registry, reset_global_context
from sample_factory.envs.env_utils import UnknownEnvError
from sf_examples.atari.atari_params import ATARI_DEFAULTS, add_atari_env_args, atari_override_defaults
from sf_examples.atari.atari_utils import AtariSpec, atari_env_by_name, make_atari_env
from sf_examples.atari.train_atari import parse_atari_args, register_atari_envs


def test_atari_env_by_name_gives_the_ale_id() -> None:
    spec = atari_env_by_name("atari_breakout")
    assert spec == AtariSpec("atari_breakout", "ALE/Breakout-v5", None)
    with pytest.raises(UnknownEnvError, match="atari_breakout"):
        atari_env_by_name("atari_brekout")


def test_make_atari_env_takes_the_env_name_first() -> None:
    env = make_atari_env(env_name="atari_pong")
    try:
        obs, _ = env.reset(seed=1)
        assert obs.shape == (4, 84, 84)
    finally:
        env.close()


def test_atari_override_defaults_takes_the_env_name_first() -> None:
    parser = argparse.ArgumentParser()
    add_atari_env_args(parser)
    atari_override_defaults("atari_pong", parser)
    args = parser.parse_args([])
    assert args.atari_episodic_life is True
    assert parser.get_default("num_workers") == ATARI_DEFAULTS["num_workers"]


def test_parse_atari_args_applies_the_family_defaults() -> None:
    cfg = parse_atari_args(["--env=atari_pong", "--experiment=x"])
    assert cfg.env_framestack == 4 and cfg.rollout == 128


def test_register_atari_envs_registers_every_game() -> None:
    reset_global_context()
    try:
        register_atari_envs()
        assert "atari_breakout" in global_env_registry() and "atari_montezuma" in global_env_registry()
    finally:
        reset_global_context()


def test_generic_tools_reach_the_family_hooks() -> None:
    """``sample_factory.eval`` and the throughput tool register and parse through the family table."""
    from sample_factory.cfg.arguments import parse_sf_args
    from sample_factory.envs.env_families import add_family_args, register_family_env
    from sf_examples.families import register_example_families

    reset_global_context()
    try:
        register_example_families()
        parser, _ = parse_sf_args(["--env=atari_pong"], evaluation=True)
        add_family_args(parser, "atari_pong", evaluation=True)
        assert parser.get_default("rollout") == 128
        register_family_env("atari_pong")
        assert "atari_pong" in global_env_registry()
    finally:
        reset_global_context()
