"""fast_path_checks: whose code a module is, the dummy batch, the comparison, and the one-line decision per trick."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch_paths import needs_private_paths

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.encoder import Encoder
from sample_factory.model.fast_path_checks import (
    CHANNELS_LAST,
    DISABLE_ENV,
    FORCE_ENV,
    RELATIVE_TOLERANCE,
    CheckFailed,
    Verdict,
    decide,
    describe,
    difference,
    dummy_batch,
    is_library_module,
    learner_outputs,
    run_check,
    run_variant,
    switched,
    user_modules,
)

CPU = torch.device("cpu")
VECTOR = gym.spaces.Box(-1.0, 1.0, (5,), dtype=np.float32)


class TinyUserEncoder(Encoder):
    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        self.fc = nn.Linear(obs_space["obs"].shape[0], 8)

    def forward(self, obs_dict):
        return self.fc(obs_dict["obs"]).view(-1, 8)

    def get_out_size(self) -> int:
        return 8


def _model(make_cfg, user_encoder: bool = False) -> nn.Module:
    if user_encoder:
        global_model_factory().register_encoder_factory(TinyUserEncoder)
    return create_actor_critic(make_cfg(use_rnn=False), VECTOR, gym.spaces.Discrete(3))


@pytest.fixture
def info_log(caplog):
    caplog.set_level(logging.INFO)
    return caplog


def _lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records]


# ---- switches ------------------------------------------------------------------------------------------------------


def test_switches_parse_names_and_all(monkeypatch) -> None:
    monkeypatch.setenv(FORCE_ENV, " channels_last, direct_calls ")
    assert switched(FORCE_ENV) == {"channels_last", "direct_calls"}
    monkeypatch.setenv(DISABLE_ENV, "all")
    assert switched(DISABLE_ENV) == {
        "channels_last",
        "direct_calls",
        "inference_mode",
        "flat_adam",
        "fused_loss",
        "gru_bptt",
    }
    monkeypatch.delenv(DISABLE_ENV)
    assert switched(DISABLE_ENV) == frozenset()


def test_an_unknown_switch_name_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv(FORCE_ENV, "channel_last")
    with pytest.raises(ValueError, match=r"SF_FORCE_FAST_PATHS='channel_last'.*\['channel_last'\].*channels_last"):
        switched(FORCE_ENV)


# ---- whose code --------------------------------------------------------------------------------------------------


@needs_private_paths
def test_the_library_model_has_no_user_modules(make_cfg) -> None:
    model = _model(make_cfg)
    assert all(is_library_module(m) for m in model.modules())
    assert user_modules(model) == []


@needs_private_paths
def test_user_modules_are_the_outermost_ones_not_the_librarys(make_cfg) -> None:
    model = _model(make_cfg, user_encoder=True)
    assert user_modules(model) == [("encoder", model.encoder)]
    assert describe(user_modules(model)) == "encoder TinyUserEncoder"
    assert is_library_module(model.encoder.fc)  # a torch layer inside it is the library's


@needs_private_paths
def test_hooks_and_instance_forwards_make_library_modules_user_code(make_cfg) -> None:
    model = _model(make_cfg)
    model.critic_linear.register_forward_hook(lambda module, args, out: out * 2)
    model.decoder.forward = lambda x: x
    assert [path for path, _ in user_modules(model)] == ["decoder", "critic_linear"]
    handle = nn.modules.module.register_module_forward_pre_hook(lambda module, args: None)
    try:  # a global hook runs user code around every module
        fresh = _model(make_cfg)
        assert user_modules(fresh) == [("", fresh)]
        assert describe(user_modules(fresh)) == "actor-critic ActorCriticSharedWeights"
    finally:
        handle.remove()


# ---- dummy batch and comparison --------------------------------------------------------------------------------


def test_the_dummy_batch_follows_the_observation_space() -> None:
    space = gym.spaces.Dict(
        {
            "obs": gym.spaces.Box(0, 255, (3, 8, 8), dtype=np.uint8),
            "vector": VECTOR,
            "action_mask": gym.spaces.Box(0, 1, (4,), dtype=np.int8),
        }
    )
    batch = dummy_batch(space, rnn_size=6, device=CPU)
    assert batch.obs["obs"].shape == (4, 3, 8, 8) and batch.obs["obs"].dtype == torch.uint8
    assert batch.obs["vector"].shape == (4, 5) and batch.obs["vector"].dtype == torch.float32
    assert torch.equal(batch.action_mask, torch.ones(4, 4, dtype=torch.int8))  # every action allowed
    assert batch.rnn_states.shape == (4, 6) and batch.actions is None
    again = dummy_batch(space, rnn_size=6, device=CPU)
    assert torch.equal(again.obs["obs"], batch.obs["obs"]), "seeded: every process checks on the same data"


def test_difference_accepts_float_noise_and_reports_real_differences() -> None:
    a = {"values": torch.tensor([1.0, -2.0, 3.0]), "actions": torch.tensor([0, 1, 2]), "none": None}
    noisy = {**a, "values": a["values"] * (1 + RELATIVE_TOLERANCE / 10)}
    assert difference(a, noisy) is None
    assert "values differs by" in difference(a, {**a, "values": a["values"] + 0.1})
    assert difference(a, {**a, "actions": torch.tensor([0, 1, 1])}) == "actions differs"
    assert "(2,)" in difference(a, {**a, "values": a["values"][:2]})
    assert difference(a, {"values": a["values"]}).startswith("it returns")
    nan = torch.tensor([float("nan"), 1.0])
    assert difference({"x": nan}, {"x": nan.clone()}) is None
    assert difference({"x": nan}, {"x": torch.tensor([0.0, 1.0])}) is not None


class Exploder(nn.Module):
    def forward(self, x):
        raise ValueError("no such layout")


class OuterEncoder(TinyUserEncoder):
    def __init__(self, cfg, obs_space):
        super().__init__(cfg, obs_space)
        self.inner = Exploder()

    def forward(self, obs_dict):
        return self.inner(super().forward(obs_dict))


def test_a_failing_variant_names_the_innermost_user_module(make_cfg) -> None:
    global_model_factory().register_encoder_factory(OuterEncoder)
    model = create_actor_critic(make_cfg(use_rnn=False), VECTOR, gym.spaces.Discrete(3))
    batch = dummy_batch(VECTOR, rnn_size=1, device=CPU)
    with pytest.raises(CheckFailed) as failed:
        run_variant("its forward fails on this batch", lambda: learner_outputs(model, batch), model)
    assert failed.value.verdict.reason == "its forward fails on this batch (ValueError: no such layout)"
    assert failed.value.verdict.culprit == ("encoder.inner", model.encoder.inner)


# ---- deciding ------------------------------------------------------------------------------------------------------


@needs_private_paths
def test_library_models_need_no_check(make_cfg, info_log) -> None:
    def check() -> None:
        raise AssertionError("not called for the library's modules")

    assert decide("Learner", CHANNELS_LAST, _model(make_cfg), check, CPU)
    assert _lines(info_log) == ["Learner: channels-last used (every module of the model is the library's own)"]


@needs_private_paths
def test_user_modules_use_a_trick_only_when_its_check_passes(make_cfg, info_log) -> None:
    model = _model(make_cfg, user_encoder=True)
    assert decide("Learner", CHANNELS_LAST, model, lambda: None, CPU)

    def failing() -> None:
        raise CheckFailed(Verdict("it differs", ("encoder", model.encoder)))

    assert not decide("Learner", CHANNELS_LAST, model, failing, CPU)
    assert _lines(info_log) == [
        "Learner: channels-last used for encoder TinyUserEncoder: it passed the start-up check",
        "Learner: channels-last skipped for encoder TinyUserEncoder: it differs",
    ]


def test_switches_override_the_check(make_cfg, info_log, monkeypatch) -> None:
    model = _model(make_cfg, user_encoder=True)

    def failing() -> None:
        raise CheckFailed(Verdict("it differs"))

    monkeypatch.setenv(FORCE_ENV, "channels_last")
    assert decide("Learner", CHANNELS_LAST, model, failing, CPU)
    monkeypatch.setenv(DISABLE_ENV, "channels_last")  # off wins over forced
    assert not decide("Learner", CHANNELS_LAST, _model(make_cfg), lambda: None, CPU)
    assert _lines(info_log) == [
        "Learner: channels-last forced on by SF_FORCE_FAST_PATHS, without its start-up check",
        "Learner: channels-last skipped: switched off by SF_DISABLE_FAST_PATHS",
    ]


def test_a_check_leaves_the_random_streams_alone() -> None:
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    verdict = run_check(lambda: torch.rand(100), CPU)
    assert verdict is None and torch.equal(torch.rand(3), expected)
    assert (
        run_check(lambda: 1 / 0, CPU).reason == "the start-up check could not run (ZeroDivisionError: division by zero)"
    )


def test_with_torchs_private_paths_off_the_librarys_model_is_checked_like_a_users(
    make_cfg, info_log, public_torch_paths
) -> None:
    """Hooks cannot be read without torch's private names: no module is taken for the library's own, so every trick
    goes through its start-up check, on the whole model."""
    model = _model(make_cfg)
    assert user_modules(model) == [("", model)] and not is_library_module(model.encoder)
    assert decide("Learner", CHANNELS_LAST, model, lambda: None, CPU)

    def failing() -> None:
        raise CheckFailed(Verdict("it differs"))

    assert not decide("Learner", CHANNELS_LAST, model, failing, CPU)
    assert _lines(info_log)[-2:] == [
        "Learner: channels-last used for actor-critic ActorCriticSharedWeights: it passed the start-up check",
        "Learner: channels-last skipped for actor-critic ActorCriticSharedWeights: it differs",
    ]
