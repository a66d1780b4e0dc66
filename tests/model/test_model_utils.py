from __future__ import annotations

import pytest
import torch
from torch import nn

from sample_factory.model.model_utils import (
    create_mlp,
    get_rnn_size,
    initialize_weights,
    keep_torch_init,
    keeps_torch_init,
    model_device,
    nonlinearity,
)


@pytest.mark.parametrize(("name", "cls"), [("elu", nn.ELU), ("relu", nn.ReLU), ("tanh", nn.Tanh)])
def test_nonlinearity_follows_flag(make_cfg, name, cls):
    assert type(nonlinearity(make_cfg(nonlinearity=name))) is cls


def test_nonlinearity_rejects_unknown(make_cfg):
    with pytest.raises(ValueError, match="--nonlinearity"):
        nonlinearity(make_cfg(nonlinearity="gelu"))


def test_create_mlp_shapes_and_activation():
    mlp = create_mlp([8, 4], 5, nn.ReLU())
    linears = [m for m in mlp if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(5, 8), (8, 4)]
    out = mlp(torch.randn(3, 5))
    assert out.shape == (3, 4)
    assert (out >= 0).all()  # the last layer is followed by the activation too


def test_create_mlp_empty_is_identity():
    x = torch.randn(2, 7)
    assert torch.equal(create_mlp([], 7, nn.ELU())(x), x)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (dict(use_rnn=False), 1),
        (dict(use_rnn=False, actor_critic_share_weights=False), 1),
        (dict(rnn_type="gru", rnn_size=8), 8),
        (dict(rnn_type="gru", rnn_size=8, rnn_num_layers=3), 24),
        (dict(rnn_type="lstm", rnn_size=8, rnn_num_layers=2), 32),
        (dict(rnn_type="lstm", rnn_size=8, actor_critic_share_weights=False), 32),
        (dict(rnn_type="gru", rnn_size=8, actor_critic_share_weights=False), 16),
    ],
)
def test_get_rnn_size(make_cfg, overrides, expected):
    assert get_rnn_size(make_cfg(**overrides)) == expected


def _is_orthogonal(w: torch.Tensor, gain: float = 1.0) -> bool:
    w = w.reshape(w.shape[0], -1)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    return torch.allclose(gram, gain**2 * torch.eye(gram.shape[0]), atol=1e-4)


def test_orthogonal_init_of_linear_conv_and_rnn_gates():
    model = nn.Sequential(nn.Linear(6, 10), nn.Conv2d(3, 4, 3), nn.LSTM(5, 7))
    model.apply(lambda m: initialize_weights(m, "orthogonal", 2.0))
    assert _is_orthogonal(model[0].weight, 2.0) and _is_orthogonal(model[1].weight, 2.0)
    assert torch.all(model[0].bias == 0) and torch.all(model[1].bias == 0)
    for gate in model[2].weight_hh_l0.chunk(4, dim=0):  # [7, 7] recurrent matrix per gate
        assert _is_orthogonal(gate, 2.0)
    assert torch.all(model[2].bias_ih_l0 == 0) and torch.all(model[2].bias_hh_l0 == 0)


def test_xavier_init_stays_within_bound():
    layer = nn.Linear(30, 20)
    initialize_weights(layer, "xavier_uniform", 1.0)
    bound = (6 / (30 + 20)) ** 0.5
    assert layer.weight.abs().max() <= bound and not _is_orthogonal(layer.weight)
    assert torch.all(layer.bias == 0)


def test_torch_default_keeps_weights_and_zeroes_biases():
    layer = nn.Linear(4, 4)
    weight = layer.weight.detach().clone()
    initialize_weights(layer, "torch_default", 1.0)
    assert torch.equal(layer.weight, weight) and torch.all(layer.bias == 0)


@pytest.mark.parametrize("scheme", ["orthogonal", "xavier_uniform", "torch_default"])
def test_marked_layers_keep_torch_weights_under_every_scheme(scheme):
    model = nn.Sequential(nn.Linear(6, 10), nn.GRU(5, 7))
    keep_torch_init(model)
    assert all(keeps_torch_init(layer) for layer in model.modules())
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    model.apply(lambda m: initialize_weights(m, scheme, 2.0))
    assert torch.equal(model[0].weight, before["0.weight"]) and torch.all(model[0].bias == 0)
    for name, param in model[1].named_parameters():  # the RNN's weights and biases stay as torch made them
        assert torch.equal(param, before[f"1.{name}"])
    assert torch.any(model[1].bias_ih_l0 != 0)


def test_unmarked_layers_next_to_marked_ones_get_the_scheme():
    model = nn.Sequential(keep_torch_init(nn.Linear(6, 10)), nn.Linear(10, 3))
    model.apply(lambda m: initialize_weights(m, "orthogonal", 1.0))
    assert not keeps_torch_init(model[1]) and _is_orthogonal(model[1].weight)
    assert not _is_orthogonal(model[0].weight)


def test_unknown_init_scheme_names_the_flag():
    with pytest.raises(ValueError, match="--policy_initialization"):
        initialize_weights(nn.Linear(2, 2), "kaiming", 1.0)


def test_model_device_from_parameters_or_buffers():
    assert model_device(nn.Linear(2, 3)) == torch.device("cpu")
    only_buffers = nn.BatchNorm1d(4, affine=False)
    assert next(only_buffers.parameters(), None) is None
    assert model_device(only_buffers) == torch.device("cpu")
    assert model_device(nn.Sequential(nn.ReLU())) is None
    if torch.cuda.is_available():
        assert model_device(nn.Linear(2, 3).cuda()).type == "cuda"
