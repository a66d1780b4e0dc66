from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.model.encoder import (
    ConvEncoder,
    MlpEncoder,
    MultiInputEncoder,
    ResnetEncoder,
    default_make_encoder_func,
    make_img_encoder,
)


def _image_space(shape: tuple[int, ...]) -> gym.spaces.Box:
    return gym.spaces.Box(0, 255, shape, dtype=np.uint8)


def _vector_space(size: int) -> gym.spaces.Box:
    return gym.spaces.Box(-1.0, 1.0, (size,), dtype=np.float32)


def test_mlp_encoder_flattens_and_applies_layers(make_cfg):
    encoder = MlpEncoder(make_cfg(encoder_mlp_layers=[12, 6]), gym.spaces.Box(-1, 1, (2, 5)))
    assert encoder.get_out_size() == 6
    assert encoder(torch.randn(3, 2, 5)).shape == (3, 6)


def test_mlp_encoder_without_layers_passes_features_through(make_cfg):
    encoder = MlpEncoder(make_cfg(encoder_mlp_layers=[]), _vector_space(5))
    x = torch.randn(3, 5)
    assert encoder.get_out_size() == 5 and torch.equal(encoder(x), x)


# (architecture, input shape, conv output features before the MLP)
CONV_CASES = [
    ("convnet_simple", (3, 36, 36), 128 * 1 * 1),
    ("convnet_atari", (4, 84, 84), 64 * 7 * 7),
    ("convnet_impala", (3, 64, 64), 32 * 6 * 6),
    ("resnet_impala", (3, 64, 64), 32 * 8 * 8),
]


@pytest.mark.parametrize(("arch", "shape", "conv_features"), CONV_CASES)
def test_image_encoders(make_cfg, arch, shape, conv_features):
    encoder = make_img_encoder(make_cfg(encoder_conv_architecture=arch), _image_space(shape))
    assert isinstance(encoder, ResnetEncoder if arch == "resnet_impala" else ConvEncoder)
    assert encoder.conv_head_out_size == conv_features
    obs = torch.randint(0, 256, (2, *shape), dtype=torch.uint8)
    out = encoder(obs)
    assert out.shape == (2, 16) and out.dtype == torch.float32
    torch.testing.assert_close(out, encoder(obs.float()))  # uint8 is only cast, not rescaled


def test_unknown_conv_architecture_names_the_flag(make_cfg):
    with pytest.raises(ValueError, match="--encoder_conv_architecture"):
        ConvEncoder(make_cfg(encoder_conv_architecture="vit"), _image_space((3, 36, 36)))


def test_multi_input_encoder_concatenates_keys_and_ignores_action_mask(make_cfg):
    space = gym.spaces.Dict(
        {
            "image": _image_space((3, 36, 36)),
            "vec": _vector_space(5),
            "action_mask": gym.spaces.Box(0, 1, (4,), dtype=np.int8),
        }
    )
    encoder = MultiInputEncoder(make_cfg(encoder_mlp_layers=[7], encoder_conv_mlp_layers=[9]), space)
    assert encoder.obs_keys == ["image", "vec"]
    assert isinstance(encoder.encoders["image"], ConvEncoder) and isinstance(encoder.encoders["vec"], MlpEncoder)
    assert encoder.get_out_size() == 9 + 7
    obs = {"image": torch.rand(2, 3, 36, 36), "vec": torch.randn(2, 5), "action_mask": torch.ones(2, 4)}
    out = encoder(obs)
    assert out.shape == (2, 16)
    torch.testing.assert_close(out[:, :9], encoder.encoders["image"](obs["image"]))
    torch.testing.assert_close(out[:, 9:], encoder.encoders["vec"](obs["vec"]))


def test_plain_box_space_is_read_from_obs_key(make_cfg):
    encoder = default_make_encoder_func(make_cfg(), _vector_space(3))
    assert isinstance(encoder, MultiInputEncoder) and encoder.obs_keys == ["obs"]
    assert encoder({"obs": torch.randn(4, 3)}).shape == (4, 16)


def test_non_box_key_is_rejected_by_name(make_cfg):
    space = gym.spaces.Dict({"obs": _vector_space(3), "level": gym.spaces.Discrete(4)})
    with pytest.raises(TypeError, match="'level'"):
        MultiInputEncoder(make_cfg(), space)
