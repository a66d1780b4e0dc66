"""Per-layer weight initialisers for custom models (``module.apply``)."""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

from sample_factory.model.utils import he_normal_init, orthogonal_init


def _model() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64, 32), nn.LayerNorm(32))


def test_orthogonal_init_with_gain_zeroes_biases():
    model = _model()
    for m in model:
        if hasattr(m, "bias") and m.bias is not None:
            nn.init.constant_(m.bias, 0.5)
    model.apply(functools.partial(orthogonal_init, gain=2.0))
    linear, conv = model[3], model[0]
    torch.testing.assert_close(linear.weight @ linear.weight.T, 4.0 * torch.eye(32), atol=1e-4, rtol=0)
    conv_rows = conv.weight.reshape(16, -1)
    torch.testing.assert_close(conv_rows @ conv_rows.T, 4.0 * torch.eye(16), atol=1e-4, rtol=0)
    assert linear.bias.abs().max() == 0 and conv.bias.abs().max() == 0
    assert torch.all(model[4].weight == 1) and torch.all(model[4].bias == 0.5)  # LayerNorm untouched


def test_orthogonal_init_default_gain_one_and_rnn_gates():
    gru = nn.GRU(8, 8)
    orthogonal_init(gru)
    for gate in gru.weight_hh_l0.chunk(3, dim=0):
        torch.testing.assert_close(gate @ gate.T, torch.eye(8), atol=1e-5, rtol=0)
    assert gru.bias_hh_l0.abs().max() == 0


def test_he_normal_init_has_relu_variance():
    torch.manual_seed(0)
    layer = nn.Linear(400, 500)
    he_normal_init(layer)
    expected_std = math.sqrt(2.0 / 400)
    assert abs(layer.weight.std().item() / expected_std - 1) < 0.02
    assert abs(layer.weight.mean().item()) < 0.01 * expected_std * 10
    assert layer.bias.abs().max() == 0
