"""Sample Factory 2's model names at its paths: fc_layer, initialisers, decoder and action-head names."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest
import torch
from torch import nn

from sample_factory.model.action_parameterization import (
    ActionParameterizationBase,
    ActionParameterizationContinuousNonAdaptiveStddev,
    ActionsParameterization,
    make_action_parameterization,
)
from sample_factory.model.actor_critic import obs_space_without_action_mask
from sample_factory.model.decoder import MlpDecoder, default_make_decoder_func
from sample_factory.model.model_utils import fc_layer
from sample_factory.model.utils import he_normal_init, orthogonal_init


def test_fc_layer_plain_and_without_bias() -> None:
    layer = fc_layer(6, 3)
    assert isinstance(layer, nn.Linear) and layer.bias is not None and layer.weight.shape == (3, 6)
    assert fc_layer(in_features=6, out_features=3, bias=False).bias is None


def test_fc_layer_spectral_norm_bounds_the_largest_singular_value() -> None:
    torch.manual_seed(0)
    layer = fc_layer(8, 8, spec_norm=True)
    with torch.no_grad():
        layer.parametrizations.weight.original.mul_(10.0)
        for _ in range(20):  # power iterations run in training mode
            layer(torch.randn(4, 8))
    assert torch.linalg.matrix_norm(layer.weight, ord=2).item() == pytest.approx(1.0, abs=0.05)


def test_initialisers_take_sf2_parameter_names() -> None:
    linear = nn.Linear(64, 64)
    orthogonal_init(module=linear, gain=2.0)
    torch.testing.assert_close(linear.weight @ linear.weight.T, 4.0 * torch.eye(64), atol=1e-4, rtol=0)
    assert linear.bias.abs().sum() == 0
    torch.manual_seed(0)
    wide = nn.Linear(400, 400)
    he_normal_init(module=wide)
    assert wide.weight.std().item() == pytest.approx(math.sqrt(2 / 400), rel=0.05)


def test_obs_space_without_action_mask() -> None:
    space = gym.spaces.Dict({"obs": gym.spaces.Box(-1, 1, (3,)), "action_mask": gym.spaces.MultiBinary(4)})
    stripped = obs_space_without_action_mask(space)
    assert list(stripped.spaces) == ["obs"]
    assert set(space.spaces) == {"obs", "action_mask"}  # the input is not changed
    box = gym.spaces.Box(-1, 1, (3,))
    assert obs_space_without_action_mask(box) is box


def test_default_make_decoder_func_takes_core_input_size(make_cfg) -> None:
    decoder = default_make_decoder_func(make_cfg(decoder_mlp_layers=[7]), core_input_size=5)
    assert isinstance(decoder, MlpDecoder) and decoder.get_out_size() == 7
    assert decoder(torch.rand(3, 5)).shape == (3, 7)


def test_action_parameterization_names(make_cfg) -> None:
    assert ActionsParameterization is ActionParameterizationBase
    space = gym.spaces.Box(-1, 1, (2,))
    head = make_action_parameterization(make_cfg(adaptive_stddev=False, initial_stddev=0.5), 4, space)
    assert isinstance(head, ActionParameterizationContinuousNonAdaptiveStddev)
    logits, _ = head(torch.rand(3, 4))
    torch.testing.assert_close(logits[:, 2:], torch.full((3, 2), math.log(0.5)))
