"""The example families' own models pass every fast-path check, which is why the learner and the inference worker
trust them as library code and skip the checks at start-up (``fast_path_checks.FAMILY_MODEL_MODULES``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from sample_factory.algo.learning.learner_fast_paths import (
    CHECK_SGD_STEPS,
    check_channels_last,
    check_flat_adam,
    check_fused_loss,
)
from sample_factory.algo.sampling.inference_fast_paths import check_passes
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.fast_path_checks import CHECK_SEED, FAMILY_MODEL_MODULES, dummy_batch, user_modules
from sample_factory.model.model_utils import get_rnn_size
from sf_examples.vizdoom.doom.doom_model import VizdoomEncoder
from sf_examples.vizdoom.train_vizdoom import parse_vizdoom_cfg, register_vizdoom_models

CPU = torch.device("cpu")
SCREEN = gym.spaces.Box(0, 255, (3, 72, 128), dtype=np.uint8)
WITH_MEASUREMENTS = gym.spaces.Dict(
    {"obs": SCREEN, "measurements": gym.spaces.Box(-10.0, 10.0, (7,), dtype=np.float32)}
)


def _doom_model(obs_space: gym.Space):
    cfg = parse_vizdoom_cfg(["--env=doom_basic", "--experiment=family_models", "--rnn_size=32"])
    register_vizdoom_models()
    model = create_actor_critic(cfg, obs_space, gym.spaces.Discrete(4))
    return cfg, model


def test_the_trusted_modules_are_exactly_the_family_models():
    assert FAMILY_MODEL_MODULES == {VizdoomEncoder.__module__}


@pytest.mark.parametrize("obs_space", [SCREEN, WITH_MEASUREMENTS], ids=["screen", "screen_and_measurements"])
def test_the_vizdoom_encoder_passes_every_learner_and_inference_check(obs_space):
    cfg, model = _doom_model(obs_space)
    assert isinstance(model.encoder, VizdoomEncoder)
    assert user_modules(model) == []  # trusted: no check runs for it at start-up...
    batches = [dummy_batch(obs_space, get_rnn_size(cfg), CPU, CHECK_SEED + k) for k in range(CHECK_SGD_STEPS)]
    # ...because each check passes here (each raises CheckFailed otherwise)
    check_channels_last(model, batches[0])
    check_fused_loss(model, cfg, batches[0])
    check_flat_adam(model, cfg, batches)
    model.eval()
    check_passes(model, batches[0], torch.inference_mode, ())
    check_passes(model, batches[0], torch.inference_mode, (), direct=True)


def test_a_users_subclass_of_a_family_model_is_checked_again():
    class TweakedEncoder(VizdoomEncoder):
        def forward(self, obs_dict):
            return super().forward(obs_dict) * 2.0

    _, model = _doom_model(SCREEN)
    model.encoder.__class__ = TweakedEncoder
    assert [path for path, _ in user_modules(model)] == ["encoder"]
    model.encoder.__class__ = VizdoomEncoder
    model.encoder.forward = lambda obs_dict: nn.Identity()(obs_dict["obs"])  # an instance's own forward
    assert [path for path, _ in user_modules(model)] == ["encoder"]
