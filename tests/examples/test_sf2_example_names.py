"""The example scripts under Sample Factory 2's names: env factories called as the library calls them
(positionally), SF2's env classes, encoders, flag functions and registration calls, and the sampler's
``generate_trajectories``."""

from __future__ import annotations

import argparse
import sys

import pytest
import torch

from sample_factory.algo.utils.context import global_env_registry
from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.attr_dict import AttrDict
from sf_examples import train_custom_env_custom_model as custom_env
from sf_examples import train_custom_multi_env as multi_env
from sf_examples import train_gym_env
from sf_examples.gym import gym_utils

# ---- train_gym_env -----------------------------------------------------------------------------------------------


def test_gym_env_names(clean_context: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert train_gym_env.make_gym_env_func is gym_utils.make_gym_env_func
    env = train_gym_env.make_gym_env_func("CartPole-v1", None, None, None)  # positionally, as the library calls it
    assert env.observation_space.shape == (4,)
    env.close()

    cfg = train_gym_env.parse_custom_args(argv=["--env=CartPole-v1", "--experiment=x"])
    assert cfg.env == "CartPole-v1" and cfg.encoder_mlp_layers == [64, 64] and cfg.reward_scale == 0.1
    assert train_gym_env.parse_custom_args(["--env=CartPole-v1"], evaluation=True).max_num_episodes is not None

    monkeypatch.setattr(sys, "argv", ["train.py", "--env=FrozenLake-v1", "--experiment=x"])
    train_gym_env.register_custom_components()
    registry = global_env_registry()
    assert {"CartPole-v1", "Pendulum-v1", "FrozenLake-v1"} <= set(registry)
    assert registry["FrozenLake-v1"] is gym_utils.make_gym_env_func
    train_gym_env.register_custom_components("Blackjack-v1")
    assert "Blackjack-v1" in global_env_registry()
    with pytest.raises(UnknownEnvError, match="CartPol"):
        train_gym_env.register_custom_components("CartPol-v1")


# ---- train_custom_env_custom_model -------------------------------------------------------------------------------


def test_custom_env_factory_takes_sf2_parameters() -> None:
    cfg = AttrDict(custom_env_grid_size=7, custom_env_episode_len=11)
    env = custom_env.make_custom_env_func("my_custom_env_v1", cfg, None, "rgb_array")
    assert isinstance(env, custom_env.CustomEnv) and isinstance(env, custom_env.GridGoalEnv)
    assert (env.grid_size, env.episode_len, env.render_mode) == (7, 11, "rgb_array")
    assert env.full_env_name == "my_custom_env_v1" and env.observation_space.shape == (2, 7, 7)
    env = custom_env.make_custom_env_func("my_custom_env_v1", cfg=None, _env_config=AttrDict(worker_index=1))
    assert (env.grid_size, env.episode_len) == (5, 50)  # the flags' defaults without a config
    obs, _ = env.reset(seed=0)
    assert obs.sum() == 2.0  # one agent cell, one goal cell


def test_custom_env_flags_and_encoder_under_sf2_names(clean_context: None) -> None:
    parser = argparse.ArgumentParser()
    custom_env.add_extra_params(parser)
    custom_env.override_default_params(parser)
    args = parser.parse_args(["--custom_env_grid_size=6"])
    assert (args.custom_env_grid_size, args.custom_env_episode_len, args.env, args.rollout) == (
        6,
        50,
        "my_custom_env_v1",
        32,
    )

    custom_env.register_custom_components()
    cfg = custom_env.parse_custom_args(argv=["--experiment=x"])
    env = custom_env.CustomEnv("my_custom_env_v1", cfg)
    model = create_actor_critic(cfg, env.observation_space, env.action_space)
    assert isinstance(model.encoder, custom_env.CustomEncoder)
    obs = torch.as_tensor(env.reset(seed=0)[0]).unsqueeze(0)
    out = model(model.normalize_obs({"obs": obs}), torch.zeros(1, get_rnn_size(cfg)))
    assert out["actions"].shape == (1,) and model.encoder.get_out_size() == cfg.encoder_mlp_layers[-1]


# ---- train_custom_multi_env --------------------------------------------------------------------------------------


def test_custom_multi_env_under_sf2_names() -> None:
    cfg = AttrDict(custom_multi_env_num_cells=9, custom_env_episode_len=12)
    env = multi_env.make_custom_multi_env_func("my_custom_multi_env_v1", cfg, None, None)
    assert isinstance(env, multi_env.CustomMultiEnv) and isinstance(env, multi_env.LineGoalsMultiEnv)
    assert (env.num_cells, env.episode_len, env.num_agents) == (9, 12, 2)
    assert env.observation_space.shape == (27,) and env.full_env_name == "my_custom_multi_env_v1"
    obs, infos = env.reset(seed=1)
    assert len(obs) == 2 and all(o.sum() == 3.0 for o in obs)  # own position, own goal, the other agent

    default = multi_env.CustomMultiEnv("my_custom_multi_env_v1")
    assert (default.num_cells, default.episode_len) == (7, 30)

    parser = argparse.ArgumentParser()
    multi_env.add_extra_params_func(parser)
    args = parser.parse_args(["--custom_multi_env_num_cells=5"])
    assert (args.custom_multi_env_num_cells, args.custom_env_episode_len) == (5, 30)


# ---- sampler -----------------------------------------------------------------------------------------------------


def test_generate_trajectories_collects_the_requested_samples(
    tmp_path, clean_context: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from sf_examples.sampler.use_simplified_sampling_api import generate_trajectories, parse_args

    argv = ["--env=CartPole-v1", "--device=cpu", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=2"]
    cfg = parse_args([*argv, "--rollout=16", f"--train_dir={tmp_path}", "--experiment=gen"])
    train_gym_env.register_custom_components("CartPole-v1")
    assert generate_trajectories(cfg, None, sample_env_steps=400) == 0
    out = capsys.readouterr().out
    samples = int(out.split("Collected ")[1].split(" ")[0])
    assert 400 <= samples < 400 + 2 * 16 * 2 and samples % 16 == 0
