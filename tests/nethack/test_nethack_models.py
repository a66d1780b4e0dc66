"""The NetHack encoders and their parts: shapes, what they read, and that gradients reach every input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from nethack_fakes import OBS_SPACE, make_obs

from sf_examples.nethack.models import MODELS, scaled
from sf_examples.nethack.models.chaotic_dwarf import (
    BLStatsEncoder,
    BottomLinesEncoder,
    ChaoticDwarvenGPT5,
    InverseModel,
    MessageEncoder,
    ScreenEncoder,
    TopLineEncoder,
)
from sf_examples.nethack.models.chaotic_dwarf import conv_outdim as dwarf_conv_outdim
from sf_examples.nethack.models.crop import Crop
from sf_examples.nethack.models.scaled import CharColorEncoderResnet, ResBlock, ScaledNet, conv_outdim, selectt
from sf_examples.nethack.models.utils import interleave
from sf_examples.nethack.nethack_params import add_nethack_env_args, nethack_override_defaults
from sf_examples.nethack.train_nethack import make_nethack_encoder
from sf_examples.nethack.utils.wrappers.prev_actions import PrevActionsWrapper
from sf_examples.nethack.utils.wrappers.tile_tty import TileTTY


def small_cfg(*args: str):
    import argparse

    parser = argparse.ArgumentParser()
    add_nethack_env_args("nethack_score", parser)
    nethack_override_defaults("nethack_score", parser)
    small = ["--h_dim=32", "--msg_hdim=8", "--blstats_hdim=16", "--fc_after_cnn_hdim=16", "--crop_dim=5"]
    return parser.parse_args([*small, "--char_edim=4", "--color_edim=4", "--screen_conv_blocks=2", *args])


def env_space(crop: int = 0) -> gym.spaces.Dict:
    from nethack_fakes import ScriptedNetHack

    env = ScriptedNetHack([make_obs()])
    if crop:
        env = TileTTY(env, crop_size=crop, rescale_font_size=(6, 6))
    return PrevActionsWrapper(env).observation_space


def batch_of(space: gym.spaces.Dict, size: int = 3) -> dict[str, torch.Tensor]:
    obs = make_obs(x=4, y=2, message="Hello")
    obs["prev_actions"] = np.array([5])
    if "screen_image" in space.spaces:
        obs["screen_image"] = np.random.default_rng(0).integers(0, 256, space["screen_image"].shape)
    return {key: torch.as_tensor(np.stack([obs[key]] * size)).float() for key in space.spaces}


def test_interleave_alternates_and_keeps_the_tail() -> None:
    assert interleave([1, 2, 3], ["a", "b"]) == [1, "a", 2, "b", 3]
    assert interleave() == []


def test_conv_outdim_matches_torch() -> None:
    conv = torch.nn.Conv1d(1, 1, kernel_size=5, stride=3, padding=2, dilation=2)
    assert conv(torch.zeros(1, 1, 50)).shape[-1] == conv_outdim(50, 5, padding=2, stride=3, dilation=2)
    assert dwarf_conv_outdim is conv_outdim


def test_crop_centres_on_x_y_and_pads_with_zeros() -> None:
    grid = torch.arange(1, 21, dtype=torch.float32).view(1, 4, 5)  # rows 0..3, columns 0..4
    crop = Crop(4, 5, 3, 3)
    window = crop(grid, torch.tensor([[1, 2]]))  # x=1 (column), y=2 (row)
    assert window[0].tolist() == [[6, 7, 8], [11, 12, 13], [16, 17, 18]]
    corner = crop(grid, torch.tensor([[0, 0]]))[0]
    assert corner.tolist() == [[0, 0, 0], [0, 1, 2], [0, 6, 7]]
    channels = crop(torch.stack([grid, -grid], dim=1), torch.tensor([[1, 2]]))
    assert channels.shape == (1, 2, 3, 3) and channels[0, 1, 1, 1] == -12
    with pytest.raises(ValueError, match="4x5"):
        crop(torch.zeros(1, 3, 5), torch.zeros(1, 2))


def test_selectt_gives_the_embedding_either_way() -> None:
    embedding = torch.nn.Embedding(10, 4)
    codes = torch.tensor([[1, 9], [0, 3]])
    assert torch.equal(selectt(embedding, codes, True), selectt(embedding, codes, False))
    assert selectt(embedding, codes, True).shape == (2, 2, 4)


def test_res_block_keeps_the_size() -> None:
    block = ResBlock(4, 8, filter_size=3, num_layers=2)
    assert block(torch.randn(2, 4, 7, 9)).shape == (2, 8, 7, 9)
    with pytest.raises(ValueError, match="num_layers"):
        ResBlock(4, 4, 3, 0)


def test_char_color_encoder_shapes() -> None:
    encoder = CharColorEncoderResnet(
        (21, 80), h_dim=24, char_edim=4, color_edim=2, num_res_blocks=1, screen_conv_blocks=2, num_fc_layers=2
    )
    chars = torch.randint(0, 256, (2, 21, 80)).float()
    assert encoder(chars, torch.randint(0, 16, (2, 21, 80)).float()).shape == (2, 24)
    stacked = CharColorEncoderResnet((9, 9), 8, obs_frame_stack=2, no_max_pool=True, screen_conv_blocks=1)
    assert stacked(torch.zeros(2, 2, 9, 9), torch.zeros(2, 2, 9, 9)).shape == (2, 8)


def test_line_encoders() -> None:
    lines = torch.randint(32, 127, (2, 24, 80)).float()
    assert scaled.TopLineEncoder(12)(lines[:, 0]).shape == (2, 12)
    assert scaled.BottomLinesEncoder(10, scale_cnn_channels=2)(lines[:, -2:]).shape == (2, 10)
    assert TopLineEncoder()(lines[:, 0]).shape == (2, 128)
    assert BottomLinesEncoder()(lines[:, -2:]).shape == (2, 128)


def test_message_encoder_ignores_padding() -> None:
    encoder = MessageEncoder()
    short = torch.zeros(1, 256)
    short[0, :5] = torch.tensor([72.0, 101, 108, 108, 111])
    assert encoder(short).shape == (1, 128)
    assert not torch.equal(encoder(short), encoder(torch.zeros(1, 256)))


def test_blstats_and_screen_encoders() -> None:
    assert BLStatsEncoder()(torch.randn(4, 27) * 1e6).isfinite().all()
    assert ScreenEncoder((108, 108))(torch.rand(2, 3, 108, 108)).shape == (2, 512)
    with pytest.raises(ValueError, match="too small"):
        ScreenEncoder((8, 8))


def test_inverse_model_predicts_one_logit_per_action() -> None:
    model = InverseModel(16, gym.spaces.Discrete(23))
    assert model(torch.randn(5, 16), torch.randn(5, 16)).shape == (5, 23)
    assert InverseModel(16, 7).num_actions == 7


@pytest.mark.parametrize("use_crop", [True, False])
def test_scaled_net_reads_every_input(use_crop: bool) -> None:
    cfg = small_cfg("--model=ScaledNet", f"--use_crop={use_crop}", "--use_resnet=True")
    space = env_space()
    encoder = make_nethack_encoder(cfg, space)
    assert isinstance(encoder, ScaledNet) and encoder.get_out_size() == 32
    batch = batch_of(space)
    out = encoder(batch)
    assert out.shape == (3, 32)
    out.sum().backward()
    assert all(p.grad is not None for p in encoder.parameters())
    moved = dict(batch, tty_chars=batch["tty_chars"].clone())
    moved["tty_chars"][:, 0, :5] = ord("X")  # a different message line changes the encoding
    assert not torch.allclose(encoder(moved), out)


def test_chaotic_dwarf_reads_the_screen_image() -> None:
    cfg = small_cfg("--model=ChaoticDwarvenGPT5", "--use_inverse_model=True")
    space = env_space(crop=18)
    encoder = make_nethack_encoder(cfg, space)
    assert isinstance(encoder, ChaoticDwarvenGPT5) and encoder.get_out_size() == 32
    assert encoder.inverse_model.num_actions == 23
    batch = batch_of(space)
    batch["screen_image"] /= 255.0
    out = encoder(batch)
    assert out.shape == (3, 32)
    brighter = dict(batch, screen_image=batch["screen_image"] * 0.5)
    assert not torch.allclose(encoder(brighter), out)


def test_chaotic_dwarf_without_image_says_which_flag() -> None:
    with pytest.raises(ValueError, match="--add_image_observation=True"):
        make_nethack_encoder(small_cfg("--model=ChaoticDwarvenGPT5"), env_space())


def test_unknown_model_and_missing_keys_are_explained() -> None:
    cfg = small_cfg()
    cfg.model = "Resnet9000"
    with pytest.raises(ValueError, match="ScaledNet"):
        make_nethack_encoder(cfg, env_space())
    with pytest.raises(ValueError, match="tty_chars"):
        ScaledNet(small_cfg(), gym.spaces.Dict({"blstats": OBS_SPACE["blstats"]}))
    assert set(MODELS) == {"ChaoticDwarvenGPT5", "ScaledNet"}
