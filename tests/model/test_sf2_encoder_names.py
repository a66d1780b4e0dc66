"""Sample Factory 2's encoder building blocks: ConvEncoderImpl (explicit conv filters + MLP) and ResBlock."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from torch import nn

from sample_factory.model.encoder import ConvEncoder, ConvEncoderImpl, ResBlock


def test_conv_encoder_impl_builds_the_listed_layers_and_mlp() -> None:
    filters = [[3, 8, 4, 2], [8, 16, 3, 1], "maxpool_2x2"]
    enc = ConvEncoderImpl((3, 36, 36), filters, [20, 10], nn.ReLU())
    convs = [m for m in enc.conv_head if isinstance(m, nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.stride) for c in convs] == [
        (3, 8, (4, 4), (2, 2)),
        (8, 16, (3, 3), (1, 1)),
    ]
    # 36 -> (36-4)/2+1 = 17 -> 17-3+1 = 15 -> maxpool 7
    assert enc.conv_head_out_size == 16 * 7 * 7
    out = enc(torch.rand(5, 3, 36, 36))
    assert out.shape == (5, 10) and enc.get_out_size() == 10
    assert (out >= 0).all()  # the last MLP layer is followed by the activation


def test_conv_encoder_impl_without_mlp_returns_flat_conv_features() -> None:
    enc = ConvEncoderImpl([1, 8, 8], [[1, 2, 3, 1]], [], nn.ELU())
    assert enc.get_out_size() == 2 * 6 * 6
    assert enc(torch.rand(2, 1, 8, 8)).shape == (2, 72)


def test_conv_encoder_impl_compiles_with_torch_script() -> None:
    enc = ConvEncoderImpl((3, 16, 16), [[3, 4, 3, 2], [4, 4, 3, 1]], [6], nn.ELU())
    scripted = torch.jit.script(enc)
    x = torch.rand(4, 3, 16, 16)
    torch.testing.assert_close(scripted(x), enc(x))


def test_conv_encoder_impl_rejects_a_malformed_filter() -> None:
    with pytest.raises(ValueError, match="in_channels, out_channels, kernel_size, stride"):
        ConvEncoderImpl((3, 16, 16), [[3, 4, 3]], [], nn.ELU())
    with pytest.raises(ValueError, match="channels-first"):
        ConvEncoderImpl((16, 16), [[3, 4, 3, 1]], [], nn.ELU())


def test_conv_encoder_uses_conv_encoder_impl_with_sf2_state_dict_keys(make_cfg) -> None:
    cfg = make_cfg(encoder_conv_architecture="convnet_simple", encoder_conv_mlp_layers=[16])
    encoder = ConvEncoder(cfg, gym.spaces.Box(0, 255, (3, 72, 128)))
    assert isinstance(encoder.enc, ConvEncoderImpl)
    keys = set(encoder.state_dict())
    expected = {"enc.conv_head.0.weight", "enc.conv_head.2.weight", "enc.conv_head.4.weight", "enc.mlp_layers.0.weight"}
    assert expected <= keys
    assert encoder(torch.rand(2, 3, 72, 128)).shape == (2, 16)


def test_res_block_adds_its_input(make_cfg) -> None:
    block = ResBlock(make_cfg(), input_ch=4, output_ch=4)
    x = torch.randn(2, 4, 5, 5)
    torch.testing.assert_close(block(x), x + block.res_block_core(x))
    with pytest.raises(ValueError, match="same number of channels"):
        ResBlock(make_cfg(), 4, 8)
