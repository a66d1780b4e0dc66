"""Sample Factory 2's names of the Brax family: parameters as its scripts pass them, the flags and defaults, the
registration, the factory and the launcher's run description."""

from __future__ import annotations

import argparse
import inspect

import pytest
from brax_marks import needs_brax

from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.launcher.run_description import RunDescription
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.brax import brax_render, train_brax
from sf_examples.brax.brax_params import BRAX_DEFAULTS, BRAX_ENVS


@pytest.mark.parametrize(
    ("func", "leading"),
    [
        (train_brax.BraxEnv, ["brax_env", "num_actors", "render_mode", "render_res", "clamp_actions", "clamp_rew_obs"]),
        (train_brax.make_brax_env, ["full_env_name", "cfg", "_env_config", "render_mode"]),
        (train_brax.add_extra_params_func, ["parser"]),
        (train_brax.override_default_params_func, ["env", "parser"]),
        (train_brax.parse_brax_cfg, ["evaluation"]),
        (train_brax.register_brax_custom_components, ["evaluation"]),
        (train_brax.jax_to_torch, ["tensor"]),
        (train_brax.torch_to_jax, ["tensor"]),
        (brax_render.BraxRenderer, ["env", "render_mode", "brax_video_res_px"]),
        (brax_render.create_camera, ["height", "width", "qp", "ssaa", "sys", "target"]),
        (brax_render.create_light, ["target"]),
        (brax_render.create_scene, ["qp", "sys"]),
        (brax_render.quat_mul, ["u", "v"]),
    ],
)
def test_parameters_start_as_sample_factory_2s(func, leading: list[str]) -> None:
    assert list(inspect.signature(func).parameters)[: len(leading)] == leading


def test_flags_and_their_defaults() -> None:
    parser = argparse.ArgumentParser()
    train_brax.add_extra_params_func(parser)
    args = parser.parse_args([])
    assert (args.env_agents, args.brax_episode_length, args.brax_backend) == (2048, 1000, "")
    assert (args.clamp_actions, args.clamp_rew_obs, args.brax_render_res) == (False, False, 200)
    assert parser.parse_args(["--clamp_actions=True"]).clamp_actions is True
    train_brax.override_default_params_func("ant", parser)
    assert parser.get_default("env_agents") == BRAX_DEFAULTS["env_agents"]


def test_parse_brax_cfg_applies_the_family_defaults_and_the_command_line_wins() -> None:
    cfg = train_brax.parse_brax_cfg(argv=["--experiment=x", "--env_agents=64", "--batch_size=1024"])
    assert cfg.env == "ant" and cfg.env_agents == 64 and cfg.batch_size == 1024
    assert cfg.serial_mode and cfg.batched_sampling and not cfg.async_rl
    assert (cfg.num_workers, cfg.num_envs_per_worker, cfg.worker_num_splits) == (1, 1, 1)
    assert cfg.train_for_env_steps == 100_000_000 and cfg.value_bootstrap and cfg.normalize_input
    watched = train_brax.parse_brax_cfg(True, ["--env=humanoid", "--experiment=x"])
    assert watched.env == "humanoid" and watched.enjoy_script == "sf_examples.brax.enjoy_brax"


@needs_brax
def test_registration_and_the_factory(clean_context: None) -> None:
    from sample_factory.algo.utils.context import global_env_registry
    from sample_factory.envs.create_env import create_env

    train_brax.register_brax_custom_components()
    assert set(BRAX_ENVS) <= set(global_env_registry())
    cfg = AttrDict(env_agents=3, brax_episode_length=7, clamp_actions=True, brax_render_res=50, seed=2)
    env = create_env("reacher", cfg=cfg)
    assert isinstance(env, train_brax.BraxEnv)
    assert (env.num_agents, env.episode_length, env.clamp_actions, env.render_res) == (3, 7, True, 50)
    assert env.observation_space.shape == (11,) and env.action_space.shape == (2,)
    with pytest.raises(UnknownEnvError, match="reacher"):
        train_brax.make_brax_env("reachr", cfg)


@needs_brax
def test_the_seed_spreads_over_env_ids() -> None:
    cfg = AttrDict(env_agents=1, seed=5)
    first = train_brax.make_brax_env("reacher", cfg, AttrDict(env_id=0))
    second = train_brax.make_brax_env("reacher", cfg, AttrDict(env_id=1))
    assert first._seed != second._seed
    assert train_brax.make_brax_env("reacher", cfg, AttrDict(env_id=1))._seed == second._seed


def test_run_description_trains_four_tasks_with_two_seeds() -> None:
    from sf_examples.brax.experiments.brax_basic_envs import RUN_DESCRIPTION

    assert isinstance(RUN_DESCRIPTION, RunDescription)
    commands = RUN_DESCRIPTION.generate_experiments("/tmp/train_dir")
    assert len(commands) == 8
    assert all(c.cmd.startswith("python -m sf_examples.brax.train_brax ") for c in commands)
    envs = sorted({c.cmd.split("--env=")[1].split()[0] for c in commands})
    assert envs == ["ant", "halfcheetah", "humanoid", "walker2d"] and set(envs) <= set(BRAX_ENVS)
