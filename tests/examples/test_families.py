"""The example env families table: which family owns an env name; what its flags, defaults and registration do."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest

from sample_factory.algo.utils.context import global_env_registry
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import UnknownEnvError
from sf_examples.families import (
    BATCHED_CARTPOLE,
    CUSTOM_ENV,
    CUSTOM_MULTI_ENV,
    EXAMPLE_FAMILIES,
    GYM,
    VIZDOOM,
    EnvFamily,
    add_family_args,
    family_of,
    register_family_env,
)
from sf_examples.gym.gym_utils import GYM_DEFAULTS
from sf_examples.vizdoom.doom.scenarios import DOOM_SPECS


def _cfg(env: str, *flags: str, evaluation: bool = False, custom_registration: bool = False):
    """The config a tool parses for ``--env=env flags`` after applying the family of ``env``."""
    argv = [f"--env={env}", *flags]
    parser, _ = parse_sf_args(argv, evaluation=evaluation)
    add_family_args(parser, env, evaluation=evaluation, custom_registration=custom_registration)
    return parse_full_cfg(parser, argv)


@pytest.mark.parametrize("env_name", sorted(DOOM_SPECS))
def test_every_doom_env_is_vizdoom(env_name: str) -> None:
    assert family_of(env_name) is VIZDOOM


@pytest.mark.parametrize(
    ("env_name", "family"),
    [
        ("CartPole-v1", GYM),
        ("ale_py:ALE/Pong-v5", GYM),
        ("my_custom_env_v1", CUSTOM_ENV),
        ("my_custom_multi_env_v1", CUSTOM_MULTI_ENV),
        ("batched_cartpole", BATCHED_CARTPOLE),
    ],
)
def test_family_of(env_name: str, family: EnvFamily) -> None:
    assert family_of(env_name) is family


def test_owned_names_match_the_modules_env_names() -> None:
    for family, module in [
        (CUSTOM_ENV, "sf_examples.train_custom_env_custom_model"),
        (CUSTOM_MULTI_ENV, "sf_examples.train_custom_multi_env"),
        (BATCHED_CARTPOLE, "sf_examples.batched_cartpole"),
    ]:
        assert family.env_names == {importlib.import_module(module).ENV_NAME}


@pytest.mark.parametrize("family", [*EXAMPLE_FAMILIES, GYM], ids=lambda f: f.name)
def test_every_hook_names_a_function(family: EnvFamily) -> None:
    for hook in (family.register, family.add_args, family.override_defaults):
        module, _, func = hook.partition(":")
        assert callable(getattr(importlib.import_module(module), func)), hook
    assert importlib.util.find_spec(family.train_script) is not None


def test_doom_gets_its_flags_and_defaults() -> None:
    cfg = _cfg("doom_basic")
    assert cfg.env_frameskip == 4 and cfg.num_envs_per_worker == 2  # Sample Factory 2 sets no worker layout for Doom
    assert cfg.res_w == 128  # a VizDoom-only flag
    assert _cfg("doom_basic", "--env_frameskip=2").env_frameskip == 2  # the command line still wins


def test_doom_evaluation_defaults_and_train_script() -> None:
    cfg = _cfg("doom_basic", evaluation=True)
    assert (cfg.env_frameskip, cfg.eval_env_frameskip, cfg.fps) == (4, 1, 35)
    assert cfg.train_script == VIZDOOM.train_script


def test_gym_gets_gym_defaults() -> None:
    cfg = _cfg("CartPole-v1", evaluation=True)
    assert cfg.encoder_mlp_layers == GYM_DEFAULTS["encoder_mlp_layers"]
    assert cfg.train_script == "sf_examples.train_gym_env"


def test_custom_env_flags_are_accepted() -> None:
    assert _cfg("my_custom_env_v1", "--custom_env_grid_size=7").custom_env_grid_size == 7


def test_custom_registration_skips_gym_defaults_but_keeps_example_families() -> None:
    plain = _cfg("my_env_v0")
    assert plain.encoder_mlp_layers == GYM_DEFAULTS["encoder_mlp_layers"]
    assert _cfg("my_env_v0", custom_registration=True).encoder_mlp_layers != GYM_DEFAULTS["encoder_mlp_layers"]
    assert _cfg("doom_basic", custom_registration=True).env_frameskip == 4


def test_register_custom_env(clean_context) -> None:
    register_family_env("my_custom_env_v1")
    assert "my_custom_env_v1" in global_env_registry()


def test_register_gym_env(clean_context) -> None:
    register_family_env("CartPole-v1")
    assert "CartPole-v1" in global_env_registry()


def test_misspelt_doom_env_lists_the_doom_envs(clean_context) -> None:
    with pytest.raises(UnknownEnvError, match="doom_basic"):
        register_family_env("doom_basik")


def test_import_is_cheap() -> None:
    """Tools import the table for every env; only a doom_* env may pull in VizDoom (or torch, via its model)."""
    code = "import sys, sf_examples.families; print(sorted({'vizdoom', 'torch'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
