"""Custom parts registered on ``global_model_factory()`` replace the defaults (the fixture resets the factory)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.model.actor_critic import ActorCriticSharedWeights, create_actor_critic
from sample_factory.model.core import ModelCore
from sample_factory.model.decoder import Decoder, MlpDecoder
from sample_factory.model.encoder import Encoder, MultiInputEncoder
from sample_factory.model.model_utils import get_rnn_size

OBS_SPACE = gym.spaces.Dict({"obs": gym.spaces.Box(-1.0, 1.0, (6,), dtype=np.float32)})
DISCRETE = gym.spaces.Discrete(3)


class TinyEncoder(Encoder):
    """Reads the ``"obs"`` key of the dict like the user-facing custom-model example does."""

    def __init__(self, cfg, obs_space) -> None:
        super().__init__(cfg)
        self.seen_space = obs_space
        self.linear = nn.Linear(obs_space["obs"].shape[0], 3)

    def forward(self, obs_dict):
        return torch.tanh(self.linear(obs_dict["obs"]))

    def get_out_size(self) -> int:
        return 3


class DoublingCore(ModelCore):
    def __init__(self, cfg, input_size: int) -> None:
        super().__init__(cfg)
        self.core_output_size = input_size

    def forward(self, head_output, rnn_states):
        return head_output * 2, rnn_states + 1


def _run(model, batch: int = 2):
    rnn_states = torch.zeros(batch, get_rnn_size(model.cfg))
    return model(model.normalize_obs({"obs": torch.randn(batch, 6)}), rnn_states)


def test_custom_encoder_is_used(make_cfg):
    global_model_factory().register_encoder_factory(TinyEncoder)
    model = create_actor_critic(make_cfg(), OBS_SPACE["obs"], DISCRETE)
    assert isinstance(model.encoder, TinyEncoder)
    assert isinstance(model.encoder.seen_space, gym.spaces.Dict)  # a plain Box arrives wrapped as {"obs": box}
    assert model.core.core.input_size == 3
    assert _run(model)["action_logits"].shape == (2, 3)


def test_custom_encoder_is_used_by_both_halves_of_separate_weights(make_cfg):
    global_model_factory().register_encoder_factory(TinyEncoder)
    model = create_actor_critic(make_cfg(actor_critic_share_weights=False), OBS_SPACE, DISCRETE)
    assert isinstance(model.actor_encoder, TinyEncoder) and isinstance(model.critic_encoder, TinyEncoder)
    assert model.actor_encoder is not model.critic_encoder
    assert _run(model)["new_rnn_states"].shape == (2, 16)


def test_custom_core_and_decoder_are_used(make_cfg):
    factory = global_model_factory()
    factory.register_model_core_factory(DoublingCore)
    factory.register_decoder_factory(
        lambda cfg, size: MlpDecoder(cfg.__class__({**cfg, "decoder_mlp_layers": [5]}), size)
    )
    model = create_actor_critic(make_cfg(), OBS_SPACE, DISCRETE)
    assert isinstance(model.encoder, MultiInputEncoder)
    assert isinstance(model.core, DoublingCore) and isinstance(model.decoder, Decoder)
    assert model.critic_linear.in_features == 5
    assert torch.all(_run(model)["new_rnn_states"] == 1)


def test_custom_actor_critic_factory_is_used(make_cfg):
    calls = []

    def make_actor_critic(cfg, obs_space, action_space):
        calls.append(obs_space)
        return ActorCriticSharedWeights(global_model_factory(), obs_space, action_space, cfg)

    global_model_factory().register_actor_critic_factory(make_actor_critic)
    model = create_actor_critic(make_cfg(), OBS_SPACE, DISCRETE)
    assert len(calls) == 1 and isinstance(model, ActorCriticSharedWeights)


def test_defaults_return_after_reset(make_cfg):
    # the autouse fixture reset the factory after the tests above registered custom parts
    assert global_model_factory().make_model_encoder_func is None
    assert isinstance(create_actor_critic(make_cfg(), OBS_SPACE, DISCRETE).encoder, MultiInputEncoder)
