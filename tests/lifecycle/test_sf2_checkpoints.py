"""Checkpoints in Sample Factory 2.1.1's layout: the model state dict has its keys and shapes, older ones still load.

``SF2_STATE_DICTS`` lists the state dict, key by key in order, of checkpoints that Sample Factory 2.1.1 wrote for
six models (the command-line defaults, each with the flags named below): measured facts, so that this test runs
without that release. ``test_sf2_checkpoints_roundtrip.py`` (slow) runs the release itself both ways.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.cfg.arguments import default_cfg
from sample_factory.model.actor_critic import ActorCritic, ActorCriticSharedWeights
from sample_factory.model.model_factory import ModelFactory
from sf_examples.vizdoom.doom.doom_model import make_vizdoom_encoder

SF2_STATE_DICTS: dict[str, str] = {
    "mlp": """
        obs_normalizer.running_mean_std.running_mean_std.obs.running_mean 4
        obs_normalizer.running_mean_std.running_mean_std.obs.running_var 4
        obs_normalizer.running_mean_std.running_mean_std.obs.count 1
        returns_normalizer.running_mean 1
        returns_normalizer.running_var 1
        returns_normalizer.count 1
        encoder.encoders.obs.mlp_head.0.weight 512,4
        encoder.encoders.obs.mlp_head.0.bias 512
        encoder.encoders.obs.mlp_head.2.weight 512,512
        encoder.encoders.obs.mlp_head.2.bias 512
        critic_linear.weight 1,512
        critic_linear.bias 1
        action_parameterization.distribution_linear.weight 2,512
        action_parameterization.distribution_linear.bias 2
    """,
    "gru": """
        obs_normalizer.running_mean_std.running_mean_std.obs.running_mean 4
        obs_normalizer.running_mean_std.running_mean_std.obs.running_var 4
        obs_normalizer.running_mean_std.running_mean_std.obs.count 1
        returns_normalizer.running_mean 1
        returns_normalizer.running_var 1
        returns_normalizer.count 1
        encoder.encoders.obs.mlp_head.0.weight 512,4
        encoder.encoders.obs.mlp_head.0.bias 512
        encoder.encoders.obs.mlp_head.2.weight 512,512
        encoder.encoders.obs.mlp_head.2.bias 512
        core.core.weight_ih_l0 1536,512
        core.core.weight_hh_l0 1536,512
        core.core.bias_ih_l0 1536
        core.core.bias_hh_l0 1536
        critic_linear.weight 1,512
        critic_linear.bias 1
        action_parameterization.distribution_linear.weight 2,512
        action_parameterization.distribution_linear.bias 2
    """,
    "doom_conv": """
        obs_normalizer.running_mean_std.running_mean_std.obs.running_mean 3,72,128
        obs_normalizer.running_mean_std.running_mean_std.obs.running_var 3,72,128
        obs_normalizer.running_mean_std.running_mean_std.obs.count 1
        returns_normalizer.running_mean 1
        returns_normalizer.running_var 1
        returns_normalizer.count 1
        encoder.basic_encoder.enc.conv_head.0.weight 32,3,8,8
        encoder.basic_encoder.enc.conv_head.0.bias 32
        encoder.basic_encoder.enc.conv_head.2.weight 64,32,4,4
        encoder.basic_encoder.enc.conv_head.2.bias 64
        encoder.basic_encoder.enc.conv_head.4.weight 128,64,3,3
        encoder.basic_encoder.enc.conv_head.4.bias 128
        encoder.basic_encoder.enc.mlp_layers.0.weight 512,2304
        encoder.basic_encoder.enc.mlp_layers.0.bias 512
        core.core.weight_ih_l0 1536,512
        core.core.weight_hh_l0 1536,512
        core.core.bias_ih_l0 1536
        core.core.bias_hh_l0 1536
        critic_linear.weight 1,512
        critic_linear.bias 1
        action_parameterization.distribution_linear.weight 4,512
        action_parameterization.distribution_linear.bias 4
    """,
    "doom_measurements": """
        obs_normalizer.running_mean_std.running_mean_std.measurements.running_mean 23
        obs_normalizer.running_mean_std.running_mean_std.measurements.running_var 23
        obs_normalizer.running_mean_std.running_mean_std.measurements.count 1
        obs_normalizer.running_mean_std.running_mean_std.obs.running_mean 3,72,128
        obs_normalizer.running_mean_std.running_mean_std.obs.running_var 3,72,128
        obs_normalizer.running_mean_std.running_mean_std.obs.count 1
        returns_normalizer.running_mean 1
        returns_normalizer.running_var 1
        returns_normalizer.count 1
        encoder.basic_encoder.enc.conv_head.0.weight 32,3,8,8
        encoder.basic_encoder.enc.conv_head.0.bias 32
        encoder.basic_encoder.enc.conv_head.2.weight 64,32,4,4
        encoder.basic_encoder.enc.conv_head.2.bias 64
        encoder.basic_encoder.enc.conv_head.4.weight 128,64,3,3
        encoder.basic_encoder.enc.conv_head.4.bias 128
        encoder.basic_encoder.enc.mlp_layers.0.weight 512,2304
        encoder.basic_encoder.enc.mlp_layers.0.bias 512
        encoder.measurements_head.0.weight 128,23
        encoder.measurements_head.0.bias 128
        encoder.measurements_head.2.weight 128,128
        encoder.measurements_head.2.bias 128
        core.core.weight_ih_l0 1536,640
        core.core.weight_hh_l0 1536,512
        core.core.bias_ih_l0 1536
        core.core.bias_hh_l0 1536
        critic_linear.weight 1,512
        critic_linear.bias 1
        action_parameterization.distribution_linear.weight 21,512
        action_parameterization.distribution_linear.bias 21
    """,
    "doom_resnet": """
        obs_normalizer.running_mean_std.running_mean_std.obs.running_mean 3,72,128
        obs_normalizer.running_mean_std.running_mean_std.obs.running_var 3,72,128
        obs_normalizer.running_mean_std.running_mean_std.obs.count 1
        returns_normalizer.running_mean 1
        returns_normalizer.running_var 1
        returns_normalizer.count 1
        encoder.basic_encoder.conv_head.0.weight 16,3,3,3
        encoder.basic_encoder.conv_head.0.bias 16
        encoder.basic_encoder.conv_head.2.res_block_core.1.weight 16,16,3,3
        encoder.basic_encoder.conv_head.2.res_block_core.1.bias 16
        encoder.basic_encoder.conv_head.2.res_block_core.3.weight 16,16,3,3
        encoder.basic_encoder.conv_head.2.res_block_core.3.bias 16
        encoder.basic_encoder.conv_head.3.res_block_core.1.weight 16,16,3,3
        encoder.basic_encoder.conv_head.3.res_block_core.1.bias 16
        encoder.basic_encoder.conv_head.3.res_block_core.3.weight 16,16,3,3
        encoder.basic_encoder.conv_head.3.res_block_core.3.bias 16
        encoder.basic_encoder.conv_head.4.weight 32,16,3,3
        encoder.basic_encoder.conv_head.4.bias 32
        encoder.basic_encoder.conv_head.6.res_block_core.1.weight 32,32,3,3
        encoder.basic_encoder.conv_head.6.res_block_core.1.bias 32
        encoder.basic_encoder.conv_head.6.res_block_core.3.weight 32,32,3,3
        encoder.basic_encoder.conv_head.6.res_block_core.3.bias 32
        encoder.basic_encoder.conv_head.7.res_block_core.1.weight 32,32,3,3
        encoder.basic_encoder.conv_head.7.res_block_core.1.bias 32
        encoder.basic_encoder.conv_head.7.res_block_core.3.weight 32,32,3,3
        encoder.basic_encoder.conv_head.7.res_block_core.3.bias 32
        encoder.basic_encoder.conv_head.8.weight 32,32,3,3
        encoder.basic_encoder.conv_head.8.bias 32
        encoder.basic_encoder.conv_head.10.res_block_core.1.weight 32,32,3,3
        encoder.basic_encoder.conv_head.10.res_block_core.1.bias 32
        encoder.basic_encoder.conv_head.10.res_block_core.3.weight 32,32,3,3
        encoder.basic_encoder.conv_head.10.res_block_core.3.bias 32
        encoder.basic_encoder.conv_head.11.res_block_core.1.weight 32,32,3,3
        encoder.basic_encoder.conv_head.11.res_block_core.1.bias 32
        encoder.basic_encoder.conv_head.11.res_block_core.3.weight 32,32,3,3
        encoder.basic_encoder.conv_head.11.res_block_core.3.bias 32
        encoder.basic_encoder.mlp_layers.0.weight 512,4608
        encoder.basic_encoder.mlp_layers.0.bias 512
        core.core.weight_ih_l0 1536,512
        core.core.weight_hh_l0 1536,512
        core.core.bias_ih_l0 1536
        core.core.bias_hh_l0 1536
        critic_linear.weight 1,512
        critic_linear.bias 1
        action_parameterization.distribution_linear.weight 4,512
        action_parameterization.distribution_linear.bias 4
    """,
    "atari_conv": """
        obs_normalizer.running_mean_std.running_mean_std.obs.running_mean 4,84,84
        obs_normalizer.running_mean_std.running_mean_std.obs.running_var 4,84,84
        obs_normalizer.running_mean_std.running_mean_std.obs.count 1
        returns_normalizer.running_mean 1
        returns_normalizer.running_var 1
        returns_normalizer.count 1
        encoder.encoders.obs.enc.conv_head.0.weight 32,4,8,8
        encoder.encoders.obs.enc.conv_head.0.bias 32
        encoder.encoders.obs.enc.conv_head.2.weight 64,32,4,4
        encoder.encoders.obs.enc.conv_head.2.bias 64
        encoder.encoders.obs.enc.conv_head.4.weight 64,64,3,3
        encoder.encoders.obs.enc.conv_head.4.bias 64
        encoder.encoders.obs.enc.mlp_layers.0.weight 512,3136
        encoder.encoders.obs.enc.mlp_layers.0.bias 512
        critic_linear.weight 1,512
        critic_linear.bias 1
        action_parameterization.distribution_linear.weight 4,512
        action_parameterization.distribution_linear.bias 4
    """,
}


def _image(*shape: int) -> gym.spaces.Box:
    return gym.spaces.Box(0, 255, shape, dtype=np.uint8)


CARTPOLE = gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32)
DOOM_SCREEN = _image(3, 72, 128)
# name -> (observation space, number of discrete actions, flags, encoder factory or None for the library's)
MODELS: dict[str, tuple[gym.Space, int, dict, Callable | None]] = {
    "mlp": (CARTPOLE, 2, {"use_rnn": False}, None),  # CartPole-v1
    "gru": (CARTPOLE, 2, {"use_rnn": True, "rnn_type": "gru"}, None),  # CartPole-v1
    "doom_conv": (gym.spaces.Dict({"obs": DOOM_SCREEN}), 4, {}, make_vizdoom_encoder),  # doom_basic
    "doom_measurements": (  # doom_battle
        gym.spaces.Dict({"obs": DOOM_SCREEN, "measurements": gym.spaces.Box(-1.0, 1.0, (23,))}),
        21,
        {},
        make_vizdoom_encoder,
    ),
    "doom_resnet": (  # doom_basic
        gym.spaces.Dict({"obs": DOOM_SCREEN}),
        4,
        {"encoder_conv_architecture": "resnet_impala"},
        make_vizdoom_encoder,
    ),
    "atari_conv": (_image(4, 84, 84), 4, {"use_rnn": False, "encoder_conv_architecture": "convnet_atari"}, None),
}


def _recorded(name: str) -> dict[str, tuple[int, ...]]:
    rows = [line.split() for line in SF2_STATE_DICTS[name].strip().splitlines()]
    return {key: tuple(int(n) for n in shape.split(",")) for key, shape in rows}


def _model(name: str, **extra_flags) -> ActorCritic:
    obs_space, num_actions, flags, make_encoder = MODELS[name]
    cfg = default_cfg()
    for key, value in {**flags, **extra_flags}.items():
        setattr(cfg, key, value)
    factory = ModelFactory()
    if make_encoder is not None:
        factory.register_encoder_factory(make_encoder)
    return ActorCriticSharedWeights(factory, obs_space, gym.spaces.Discrete(num_actions), cfg)


@pytest.mark.parametrize("name", list(MODELS))
def test_saved_state_dict_has_sf2_keys_and_shapes(name: str):
    state = _model(name).state_dict()
    assert {key: tuple(value.shape) for key, value in state.items()} == _recorded(name)
    # the optimiser's state follows the parameters by position: their order must be SF2's too
    parameters = [key for key, _ in _model(name).named_parameters()]
    assert parameters == [key for key in _recorded(name) if key in parameters]


@pytest.mark.parametrize("name", list(MODELS))
def test_an_sf2_state_dict_loads_strictly(name: str):
    generator = torch.Generator().manual_seed(0)
    sf2_state = {key: torch.randn(shape, generator=generator) for key, shape in _recorded(name).items()}
    model = _model(name)
    model.load_state_dict(sf2_state)  # strict: no key missing or unexpected, every shape equal
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, sf2_state[key].to(value.dtype))


# the layout this library wrote before it took SF2's: (current key fragment, the older one), applied in order
OLD_LAYOUT = [
    ("obs_normalizer.running_mean_std.running_mean_std.", "obs_normalizer.running_mean_std."),
    ("encoder.basic_encoder.enc.", "encoder.screen_encoder."),
    ("encoder.basic_encoder.", "encoder.screen_encoder."),
    ("encoder.measurements_head.", "encoder.measurements_mlp."),
    (".enc.conv_head.", ".conv_head."),
    (".enc.mlp_layers.", ".mlp_layers."),
]


def _old_key(key: str) -> str:
    for new, old in OLD_LAYOUT:
        key = key.replace(new, old)
    return key


def _older_checkpoint(model: ActorCritic) -> dict[str, torch.Tensor]:
    """``model``'s state dict as the library saved it before: other names, 0-dim counts and return statistics."""
    old = {}
    for key, value in model.state_dict().items():
        scalar = key.endswith(".count") or key.startswith("returns_normalizer.")
        old[_old_key(key)] = value.reshape(()) if scalar else value
    return old


@pytest.mark.parametrize("name", ["mlp", "gru", "doom_conv", "doom_measurements", "doom_resnet", "atari_conv"])
def test_checkpoints_of_the_older_layout_still_load(name: str):
    source = _model(name, encoder_mlp_layers=[16], encoder_conv_mlp_layers=[16], rnn_size=8)
    with torch.no_grad():
        for value in source.state_dict().values():
            value.copy_(torch.rand_like(value) + 1.0)
    old = _older_checkpoint(source)
    assert any(value.dim() == 0 for value in old.values())
    if name.startswith("doom"):
        assert any(key.startswith("encoder.screen_encoder.conv_head.") for key in old)
    target = _model(name, encoder_mlp_layers=[16], encoder_conv_mlp_layers=[16], rnn_size=8)
    target.load_state_dict(old)
    expected, loaded = source.state_dict(), target.state_dict()
    assert list(loaded) == list(expected)
    for key in expected:
        assert torch.equal(loaded[key], expected[key]), key


def test_a_normaliser_saved_with_0_dim_statistics_keeps_working():
    model = _model("mlp", encoder_mlp_layers=[16])
    old = _older_checkpoint(model)
    old["returns_normalizer.running_mean"] = torch.tensor(2.0, dtype=torch.float64)
    old["returns_normalizer.running_var"] = torch.tensor(4.0, dtype=torch.float64)
    old["returns_normalizer.count"] = torch.tensor(10.0, dtype=torch.float64)
    model.load_state_dict(old)
    normalizer = model.returns_normalizer.eval()
    assert normalizer.count.shape == (1,) and float(normalizer.count) == 10.0
    out = normalizer(torch.tensor([2.0, 4.0]))
    torch.testing.assert_close(out, torch.tensor([0.0, 2.0 / (4.0 + normalizer.epsilon) ** 0.5]))
    normalizer.train()(torch.tensor([6.0]))  # one more sample: the mean of 11 values
    torch.testing.assert_close(normalizer.running_mean, torch.tensor([26.0 / 11.0], dtype=torch.float64))
