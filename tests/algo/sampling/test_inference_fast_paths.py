"""The inference worker's fast paths on user modules: inference mode and direct calls where the start-up check holds,
the plain path (one log line saying why) where it does not."""

from __future__ import annotations

import copy
import logging

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from sample_factory.algo.sampling.inference_fast_paths import inference_fast_paths
from sample_factory.algo.utils.context import global_model_factory, reset_global_context
from sample_factory.cfg.arguments import default_cfg
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.decoder import Decoder
from sample_factory.model.encoder import Encoder
from sample_factory.model.fast_path_checks import FORCE_ENV, dummy_batch, inference_outputs
from sample_factory.model.model_utils import get_rnn_size

VECTOR = gym.spaces.Box(-1.0, 1.0, (4,), dtype=np.float32)
CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def _clean(caplog):
    reset_global_context()
    caplog.set_level(logging.INFO)
    yield
    reset_global_context()


def _worker_model(**registered):
    """A model as the worker prepares it (eval mode, its fast paths decided) and a plain copy made before."""
    factory = global_model_factory()
    for part, make in registered.items():
        getattr(factory, f"register_{part}_factory")(make)
    cfg = default_cfg(env="inference_fast_path_test")
    cfg.use_rnn, cfg.encoder_mlp_layers = False, [16]
    torch.manual_seed(0)
    model = create_actor_critic(cfg, VECTOR, gym.spaces.Discrete(3)).eval()
    plain = copy.deepcopy(model)
    grad_mode = inference_fast_paths(model, VECTOR, get_rnn_size(cfg), CPU)
    return model, plain, grad_mode, cfg


def _same_outputs(model, plain, grad_mode, cfg) -> None:
    batch = dummy_batch(VECTOR, get_rnn_size(cfg), CPU, seed=7)
    expected = inference_outputs(plain, batch, torch.no_grad, seed=1)
    got = inference_outputs(model, batch, grad_mode, seed=1)
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], msg=key)


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Inference worker:")]


def _direct(module: nn.Module) -> bool:
    """Whether ``module(...)`` is its ``forward`` (the class ``call_forward_directly`` gives it)."""
    return type(module).__call__ is type(module).forward


class GradientFeatureEncoder(Encoder):
    """Uses autograd inside its forward: the gradient of a learned energy with respect to the input as features."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        self.fc = nn.Linear(obs_space["obs"].shape[0], 8)

    def forward(self, obs_dict):
        obs = obs_dict["obs"]
        with torch.enable_grad():
            x = obs.detach().clone().requires_grad_()
            (features,) = torch.autograd.grad(self.fc(x).square().sum(), x)
        return torch.cat([self.fc(obs), features.detach()], dim=1)

    def get_out_size(self) -> int:
        return 8 + VECTOR.shape[0]


class DictCallEncoder(Encoder):
    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        self.fc = nn.Linear(obs_space["obs"].shape[0], 8)

    def __call__(self, obs_dict):
        return super().__call__(obs_dict["obs"])

    def forward(self, obs):
        return self.fc(obs)

    def get_out_size(self) -> int:
        return 8


class LazilyHookedDecoder(Decoder):
    """Registers a hook on its layer at its first call: too late for a module already called directly."""

    def __init__(self, cfg, decoder_input_size):
        super().__init__(cfg)
        self.fc = nn.Linear(decoder_input_size, 8)
        self.hooked = False

    def forward(self, core_output):
        if not self.hooked:
            self.fc.register_forward_hook(lambda module, args, out: out * 3.0)
            self.hooked = True
        return self.fc(core_output)

    def get_out_size(self) -> int:
        return 8


def test_the_librarys_model_uses_both_without_a_check(caplog) -> None:
    model, plain, grad_mode, cfg = _worker_model()
    assert grad_mode is torch.inference_mode
    assert all(_direct(m) for m in model.modules() if type(m).forward is not nn.Module.forward)
    assert _lines(caplog) == [
        "Inference worker: inference mode used (every module of the model is the library's own)",
        "Inference worker: direct calls used (every module of the model is the library's own)",
    ]
    _same_outputs(model, plain, grad_mode, cfg)


def test_autograd_inside_forward_keeps_no_grad(caplog) -> None:
    model, plain, grad_mode, cfg = _worker_model(encoder=GradientFeatureEncoder)
    assert grad_mode is torch.no_grad
    assert _lines(caplog)[0].startswith(
        "Inference worker: inference mode skipped for encoder GradientFeatureEncoder: its forward fails under "
        "torch.inference_mode (RuntimeError: "
    )
    assert _lines(caplog)[1] == (
        "Inference worker: direct calls used for encoder GradientFeatureEncoder: it passed the start-up check"
    )
    _same_outputs(model, plain, grad_mode, cfg)


def test_a_call_override_keeps_its_call_and_the_rest_goes_direct(caplog) -> None:
    model, plain, grad_mode, cfg = _worker_model(encoder=DictCallEncoder)
    assert not _direct(model.encoder) and _direct(model.encoder.fc) and _direct(model.critic_linear)
    assert _lines(caplog)[-1] == (
        "Inference worker: direct calls skipped for encoder DictCallEncoder: DictCallEncoder overrides __call__ "
        "(the other modules call forward directly)"
    )
    _same_outputs(model, plain, grad_mode, cfg)


def test_forcing_direct_calls_bypasses_a_call_override(monkeypatch) -> None:
    monkeypatch.setenv(FORCE_ENV, "direct_calls")
    model, _, grad_mode, cfg = _worker_model(encoder=DictCallEncoder)
    assert _direct(model.encoder)
    with pytest.raises(TypeError):  # forward now gets the observation dict its __call__ used to unpack
        inference_outputs(model, dummy_batch(VECTOR, get_rnn_size(cfg), CPU), grad_mode, seed=1)


def test_a_difference_only_a_pass_shows_turns_direct_calls_off(caplog) -> None:
    model, plain, grad_mode, cfg = _worker_model(decoder=LazilyHookedDecoder)
    assert not any(_direct(m) for m in model.modules())
    assert _lines(caplog)[-1].startswith(
        "Inference worker: direct calls skipped for decoder LazilyHookedDecoder: with direct calls, pass 1: "
    )
    _same_outputs(model, plain, grad_mode, cfg)
