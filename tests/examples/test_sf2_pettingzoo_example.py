"""The PettingZoo example under Sample Factory 2's names: ``CustomConvEncoder`` for boards given channels last,
``make_custom_encoder``, ``register_custom_components``, ``parse_custom_args`` and the ``ConvEncoderImpl``
re-export."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.algo.utils.context import global_env_registry, global_model_factory
from sample_factory.model import encoder as library_encoder
from sf_examples import train_pettingzoo_env

# ---- train_pettingzoo_env ----------------------------------------------------------------------------------------

BOARD = gym.spaces.Dict(
    {"obs": gym.spaces.Box(0, 1, (3, 3, 2), np.int8), "action_mask": gym.spaces.Box(0, 1, (9,), np.int8)}
)


def test_pettingzoo_custom_conv_encoder_reads_boards_channels_last() -> None:
    assert train_pettingzoo_env.ConvEncoderImpl is library_encoder.ConvEncoderImpl
    cfg = train_pettingzoo_env.parse_custom_args(argv=["--experiment=x", "--encoder_conv_mlp_layers", "48"])
    encoder = train_pettingzoo_env.make_custom_encoder(cfg, BOARD)
    assert isinstance(encoder, train_pettingzoo_env.CustomConvEncoder) and encoder.get_out_size() == 48
    board = torch.zeros(4, 3, 3, 2)
    board[1, 0, 0, 0] = 1.0
    out = encoder({"obs": board, "action_mask": torch.ones(4, 9)})
    assert out.shape == (4, 48)
    assert torch.equal(out[0], out[2]) and not torch.equal(out[0], out[1])  # a piece on the board changes it
    with pytest.raises(ValueError, match="at least 3x3"):
        train_pettingzoo_env.CustomConvEncoder(cfg, gym.spaces.Dict({"obs": gym.spaces.Box(0, 1, (2, 2, 1))}))

    vector = gym.spaces.Dict({"obs": gym.spaces.Box(-1, 1, (27, 5), np.float32)})
    image_chw = gym.spaces.Dict({"obs": gym.spaces.Box(0, 255, (3, 64, 64), np.uint8)})
    for space in (vector, image_chw):
        assert not isinstance(
            train_pettingzoo_env.make_custom_encoder(cfg, space), train_pettingzoo_env.CustomConvEncoder
        )


def test_pettingzoo_register_custom_components(clean_context: None) -> None:
    train_pettingzoo_env.register_custom_components()
    assert set(train_pettingzoo_env.PETTINGZOO_SPECS) <= set(global_env_registry())
    assert global_model_factory().make_model_encoder_func is train_pettingzoo_env.make_custom_encoder
    cfg = train_pettingzoo_env.parse_custom_args(argv=["--experiment=x"], evaluation=True)
    assert cfg.env == "knights_archers_zombies_v11" and cfg.enjoy_script == "sf_examples.enjoy_pettingzoo_env"
