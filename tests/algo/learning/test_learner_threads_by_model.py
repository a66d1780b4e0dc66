"""The learner's torch thread count follows the model's compute per sample in a synchronous CPU run: a
convolutional or large dense model trains on every core, a small MLP keeps the flag's default of one thread."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from torch import nn

from sample_factory.algo.learning import learner_threads
from sample_factory.algo.learning.learner_threads import HEAVY_MULTIPLY_ADDS, learner_num_threads, model_compute
from sample_factory.cfg.arguments import default_cfg
from sample_factory.model.actor_critic import create_actor_critic


def sync_cfg(**flags):
    cfg = default_cfg(env="x")
    cfg.device, cfg.async_rl = "cpu", False
    for name, value in flags.items():
        setattr(cfg, name, value)
    return cfg


@pytest.fixture(autouse=True)
def four_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(learner_threads, "available_cores", lambda: 4)


def cartpole_model(cfg) -> nn.Module:
    return create_actor_critic(cfg, gym.spaces.Box(-1, 1, (4,), np.float32), gym.spaces.Discrete(2))


def test_a_small_mlp_keeps_one_thread_and_says_why() -> None:
    cfg = sync_cfg(encoder_mlp_layers=[64, 64], use_rnn=False)
    model = cartpole_model(cfg)
    has_conv, multiply_adds = model_compute(model)
    assert not has_conv and 4_000 < multiply_adds < 20_000  # obs 4 -> 64 -> 64, two small heads
    threads, why = learner_num_threads(cfg, 0, serial=False, model=model)
    assert threads == 1
    assert f"{multiply_adds:,} multiply-adds per sample" in why and "too few" in why


def test_a_convolutional_model_trains_on_every_core() -> None:
    cfg = sync_cfg(encoder_conv_architecture="convnet_atari", use_rnn=False)
    model = create_actor_critic(cfg, gym.spaces.Box(0, 255, (4, 84, 84), np.uint8), gym.spaces.Discrete(4))
    assert model_compute(model)[0]
    threads, why = learner_num_threads(cfg, 0, serial=False, model=model)
    assert threads == 4 and "convolutions" in why


def test_a_large_dense_model_trains_on_every_core() -> None:
    cfg = sync_cfg(encoder_mlp_layers=[512, 512], use_rnn=True, rnn_size=512)  # the library's default model
    model = cartpole_model(cfg)
    has_conv, multiply_adds = model_compute(model)
    assert not has_conv and multiply_adds >= HEAVY_MULTIPLY_ADDS
    assert learner_num_threads(cfg, 0, serial=False, model=model)[0] == 4


def test_the_model_only_matters_where_sampling_waits() -> None:
    cfg = sync_cfg(encoder_conv_architecture="convnet_atari", use_rnn=False, async_rl=True)
    model = create_actor_critic(cfg, gym.spaces.Box(0, 255, (4, 84, 84), np.uint8), gym.spaces.Discrete(4))
    assert learner_num_threads(cfg, 0, serial=False, model=model)[0] == 1
    explicit = sync_cfg(encoder_mlp_layers=[64, 64], use_rnn=False, learner_main_loop_num_cores=3)
    explicit.cli_args = {**explicit.cli_args, "learner_main_loop_num_cores": 3}
    assert learner_num_threads(explicit, 0, serial=False, model=cartpole_model(explicit)) == (
        3,
        "--learner_main_loop_num_cores=3",
    )
