"""Start-up of a run: the env info cache (--use_env_info_cache) and the env checks before any process starts."""

from __future__ import annotations

import os
import pickle

import gymnasium as gym
import pytest
import torch

from sample_factory.algo.runners.setup import ENV_INFO_CACHE_FILE, obtain_env_info
from sample_factory.cfg.arguments import default_cfg
from sample_factory.cfg.validation import ConfigError
from sample_factory.envs.env_utils import register_env
from sample_factory.utils.utils import experiment_dir

COUNTING_ENV = "counting_cartpole_for_setup_tests"
PENDULUM_ENV = "pendulum_for_setup_tests"
CREATED: list[str] = []


def _make_counting_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    CREATED.append(full_env_name)
    return gym.make("CartPole-v1", render_mode=render_mode)


def _make_pendulum(full_env_name, cfg=None, env_config=None, render_mode=None):
    return gym.make("Pendulum-v1", render_mode=render_mode)


@pytest.fixture(autouse=True)
def test_envs() -> None:
    """Registered per test: other tests reset the global env registry."""
    register_env(COUNTING_ENV, _make_counting_env)
    register_env(PENDULUM_ENV, _make_pendulum)


@pytest.fixture
def cfg(tmp_path):
    CREATED.clear()
    cfg = default_cfg(env=COUNTING_ENV, experiment="exp")
    cfg.train_dir = str(tmp_path)
    cfg.device = "cpu"
    return cfg


def _cache_path(cfg) -> str:
    return os.path.join(experiment_dir(cfg), ENV_INFO_CACHE_FILE)


def test_second_run_with_the_cache_creates_no_env(cfg) -> None:
    cfg.use_env_info_cache = True
    first = obtain_env_info(cfg)
    assert len(CREATED) == 1 and os.path.isfile(_cache_path(cfg))
    second = obtain_env_info(cfg)
    assert len(CREATED) == 1  # read from env_info.pkl
    assert second == first and second.action_space == gym.spaces.Discrete(2)


def test_without_the_flag_an_env_is_created_every_time_and_the_cache_refreshed(cfg) -> None:
    obtain_env_info(cfg)
    obtain_env_info(cfg)
    assert len(CREATED) == 2
    assert os.path.isfile(_cache_path(cfg))  # written anyway, so that a resume with the flag can use it
    cfg.use_env_info_cache = True
    obtain_env_info(cfg)
    assert len(CREATED) == 2


def test_cache_of_another_env_or_frameskip_is_not_used(cfg) -> None:
    cfg.use_env_info_cache = True
    obtain_env_info(cfg)
    with open(_cache_path(cfg), "rb") as f:
        payload = pickle.load(f)
    payload["key"]["env"] = "some_other_env"
    with open(_cache_path(cfg), "wb") as f:
        pickle.dump(payload, f)
    obtain_env_info(cfg)
    assert len(CREATED) == 2
    cfg.env_frameskip = 4
    info = obtain_env_info(cfg)
    assert len(CREATED) == 3 and info.frameskip == 4


def test_unreadable_cache_is_rebuilt(cfg) -> None:
    cfg.use_env_info_cache = True
    os.makedirs(experiment_dir(cfg), exist_ok=True)
    with open(_cache_path(cfg), "wb") as f:
        f.write(b"not a pickle")
    obtain_env_info(cfg)
    assert len(CREATED) == 1
    obtain_env_info(cfg)
    assert len(CREATED) == 1  # the rebuilt file is good
    assert [name for name in os.listdir(experiment_dir(cfg)) if name.startswith(".")] == []  # no temp file left


@pytest.mark.parametrize("serial", [True, False], ids=["serial", "parallel"])
def test_runner_refuses_a_cfg_that_does_not_fit_the_env_before_starting_processes(tmp_path, serial: bool) -> None:
    from sample_factory.train import make_runner

    cfg = default_cfg(env=PENDULUM_ENV, experiment="exp")
    cfg.train_dir, cfg.device, cfg.serial_mode = str(tmp_path), "cpu", serial
    cfg.num_workers, cfg.exploration_loss, cfg.log_to_file = 1, "symmetric_kl", False
    cfg, runner = make_runner(cfg)
    with pytest.raises(ConfigError, match="--exploration_loss=symmetric_kl works only with discrete actions"):
        runner.init()
    if not serial:
        assert runner.processes is None  # refused before any process or inbox was made


def test_each_policys_weights_are_made_where_gpu_utils_places_them(cfg, monkeypatch) -> None:
    """The meta device stands in for a policy's GPU: the runner makes the published copy there, not on the host."""
    from sample_factory.algo.runners import setup

    cfg.num_policies = 2
    asked: list[int] = []

    def placement(cfg, policy_id: int) -> torch.device:
        asked.append(policy_id)
        return torch.device("meta" if policy_id == 1 else "cpu")

    monkeypatch.setattr(setup, "weights_buffer_device", placement)
    weights = setup.initial_policy_weights(cfg, obtain_env_info(cfg), serial=True)
    assert asked == [0, 1]
    assert {t.device.type for t in weights[0].tensors.values()} == {"cpu"}
    assert {t.device.type for t in weights[1].tensors.values()} == {"meta"}
