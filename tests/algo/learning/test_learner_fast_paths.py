"""The learner's fast paths on user modules: used where the start-up check passes, the plain path (with one log line
saying why) where it does not, and forcing a trick past its check breaks what the check protects."""

from __future__ import annotations

import copy
import logging
import types

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch_paths import needs_cpu_fused_adam, needs_private_paths

from sample_factory.algo.learning import learner_fast_paths
from sample_factory.algo.learning.learner import Learner
from sample_factory.algo.learning.losses import ppo_loss, ppo_loss_autograd
from sample_factory.algo.learning.optimizers import make_optimizer
from sample_factory.algo.utils.context import global_model_factory, reset_global_context
from sample_factory.cfg.arguments import default_cfg
from sample_factory.model.actor_critic import ActorCriticSharedWeights, create_actor_critic
from sample_factory.model.encoder import Encoder
from sample_factory.model.fast_path_checks import DISABLE_ENV, FORCE_ENV
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.torch_utils import calc_num_elements

IMAGE = gym.spaces.Box(0, 255, (3, 36, 40), dtype=np.uint8)
VECTOR = gym.spaces.Box(-10.0, 10.0, (4,), dtype=np.float32)
ACTIONS = gym.spaces.Discrete(3)


@pytest.fixture(autouse=True)
def _clean(caplog):
    reset_global_context()
    caplog.set_level(logging.INFO)
    num_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(num_threads)
    reset_global_context()


def _cfg(**overrides):
    cfg = copy.deepcopy(default_cfg(env="fast_path_test"))
    settings = dict(
        device="cpu", use_rnn=False, encoder_mlp_layers=[16], encoder_conv_mlp_layers=[16], rollout=8, recurrence=1,
        batch_size=16, num_batches_per_epoch=2, num_epochs=1, learning_rate=1e-3, normalize_input=False,
    )  # fmt: skip
    for key, value in {**settings, **overrides}.items():
        setattr(cfg, key, value)
    return cfg


def _learner(obs_space: gym.Space, cfg=None, seed: int = 0) -> Learner:
    torch.manual_seed(seed)
    env_info = types.SimpleNamespace(obs_space=obs_space, action_space=ACTIONS, num_agents=1, frameskip=1)
    learner = Learner(cfg or _cfg(), env_info)
    learner.init()
    return learner


def _trajectories(cfg, obs_space: gym.Space, seed: int = 1) -> TensorDict:
    gen = torch.Generator().manual_seed(seed)
    n, t = 4, cfg.rollout
    if obs_space is IMAGE:
        obs = torch.randint(0, 256, (n, t + 1, *IMAGE.shape), dtype=torch.uint8, generator=gen)
    else:
        obs = torch.randn(n, t + 1, *obs_space.shape, generator=gen)
    return TensorDict(
        obs=TensorDict(obs=obs), rnn_states=torch.zeros(n, t + 1, get_rnn_size(cfg)),
        actions=torch.randint(0, 3, (n, t, 1), generator=gen), log_prob_actions=-torch.rand(n, t, generator=gen) - 0.5,
        action_logits=torch.randn(n, t, 3, generator=gen), values=torch.randn(n, t, generator=gen),
        rewards=torch.randn(n, t, generator=gen), dones=torch.zeros(n, t), time_outs=torch.zeros(n, t),
        valids=torch.ones(n, t, dtype=torch.bool), policy_version=torch.zeros(n, t, dtype=torch.int64),
    )  # fmt: skip


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(("Learner:", "Flat Adam"))]


class ViewEncoder(Encoder):
    """Flattens its conv output with ``.view``, as Sample Factory 2's documentation does."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        self.conv_head = nn.Sequential(nn.Conv2d(3, 8, 5, stride=3), nn.ELU())
        self.conv_head_out_size = calc_num_elements(self.conv_head, obs_space["obs"].shape)

    def forward(self, obs_dict):
        return self.conv_head(obs_dict["obs"]).view(-1, self.conv_head_out_size)

    def get_out_size(self) -> int:
        return self.conv_head_out_size


class ReshapeEncoder(ViewEncoder):
    def forward(self, obs_dict):
        return self.conv_head(obs_dict["obs"]).reshape(-1, self.conv_head_out_size)


# ---- channels-last ---------------------------------------------------------------------------------------------


def test_a_view_encoder_trains_in_nchw_and_the_log_says_why(caplog) -> None:
    global_model_factory().register_encoder_factory(ViewEncoder)
    learner = _learner(IMAGE)
    assert not learner.channels_last
    assert _lines(caplog)[0].startswith(
        "Learner: channels-last skipped for encoder ViewEncoder: its forward fails on NHWC tensors (RuntimeError: "
        "view size is not compatible with input tensor's size and stride"
    )
    stats = learner.train(learner.prepare_batch(_trajectories(learner.cfg, IMAGE)))
    assert np.isfinite(stats["loss"])


@needs_private_paths
def test_a_reshape_encoder_passes_the_check_and_trains_channels_last(caplog) -> None:
    global_model_factory().register_encoder_factory(ReshapeEncoder)
    learner = _learner(IMAGE)
    assert learner.channels_last
    assert learner.actor_critic.encoder.conv_head[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert "Learner: channels-last used for encoder ReshapeEncoder: it passed the start-up check" in _lines(caplog)
    stats = learner.train(learner.prepare_batch(_trajectories(learner.cfg, IMAGE)))
    assert np.isfinite(stats["loss"])


def test_forcing_channels_last_past_its_check_breaks_a_view_encoder(monkeypatch) -> None:
    """What the check protects against: the run dies at its first batch, as it did before the check existed."""
    monkeypatch.setenv(FORCE_ENV, "channels_last")
    global_model_factory().register_encoder_factory(ViewEncoder)
    learner = _learner(IMAGE)
    assert learner.channels_last
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        learner.prepare_batch(_trajectories(learner.cfg, IMAGE))


@needs_private_paths
def test_the_librarys_conv_models_use_channels_last_without_a_check(monkeypatch, caplog) -> None:
    def no_check(*args):
        raise AssertionError("the library's modules are proven: no check")

    monkeypatch.setattr(learner_fast_paths, "check_channels_last", no_check)
    assert _learner(IMAGE).channels_last
    assert "Learner: channels-last used (every module of the model is the library's own)" in _lines(caplog)
    monkeypatch.setenv(DISABLE_ENV, "channels_last")
    assert not _learner(IMAGE).channels_last


# ---- flat Adam -------------------------------------------------------------------------------------------------


class StaleWeightEncoder(Encoder):
    """Adds a second, untrained read of its weight through a ``.data`` reference kept from construction: flat Adam
    moves the weight to other memory, so that read would stop following the training."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        self.fc = nn.Linear(obs_space["obs"].shape[0], 8)
        self.weight_data = self.fc.weight.data

    def forward(self, obs_dict):
        return self.fc(obs_dict["obs"]) + nn.functional.linear(obs_dict["obs"], self.weight_data)

    def get_out_size(self) -> int:
        return 8


class SometimesEncoder(Encoder):
    """An extra layer used on every other call only: some steps give its parameters no gradient."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        self.fc = nn.Linear(obs_space["obs"].shape[0], 8)
        self.extra = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, obs_dict):
        self.calls += 1
        x = torch.tanh(self.fc(obs_dict["obs"]))
        return self.extra(x) if self.calls % 2 else x

    def get_out_size(self) -> int:
        return 8


@needs_cpu_fused_adam
def test_flat_adam_is_skipped_for_a_module_that_holds_old_weight_data(caplog) -> None:
    global_model_factory().register_encoder_factory(StaleWeightEncoder)
    learner = _learner(VECTOR)
    assert learner._sgd_step.flat is None
    line = next(line for line in _lines(caplog) if "flat Adam" in line)
    assert line.startswith("Learner: flat Adam skipped for encoder StaleWeightEncoder: with flat Adam: ")


@needs_cpu_fused_adam
def test_flat_adam_is_skipped_for_a_gru_that_cudnn_runs(caplog) -> None:
    """On a CUDA device cuDNN wants the GRU's weights in a buffer of its own (flat views would be copied at every
    call). Decided before any check runs, so a CPU model stands in for the GPU's; models without an RNN, and any
    model on the CPU, go on to the usual decision."""
    cfg = _cfg(use_rnn=True, rnn_type="gru")
    model = create_actor_critic(cfg, gym.spaces.Dict(obs=VECTOR), ACTIONS)
    fast_paths = learner_fast_paths.LearnerFastPaths(cfg, model, VECTOR, torch.device("cuda"))
    assert fast_paths.flat_adam(make_optimizer(cfg, model.parameters())) == (False, False)
    line = next(line for line in _lines(caplog) if "flat Adam" in line)
    assert line.startswith("Learner: flat Adam skipped: the model's GRU runs through cuDNN on cuda"), line
    assert learner_fast_paths.cudnn_rnn(model, torch.device("cpu")) is None
    no_rnn = create_actor_critic(_cfg(), gym.spaces.Dict(obs=VECTOR), ACTIONS)
    assert learner_fast_paths.cudnn_rnn(no_rnn, torch.device("cuda")) is None


@needs_cpu_fused_adam
def test_flat_adam_trains_exactly_like_torch_when_some_parameters_miss_gradients(monkeypatch, caplog) -> None:
    global_model_factory().register_encoder_factory(SometimesEncoder)
    flat = _learner(VECTOR)
    assert flat._sgd_step.flat is not None and flat._sgd_step.flat.received is not None  # used, and watching
    monkeypatch.setenv(DISABLE_ENV, "flat_adam")
    plain = _learner(VECTOR)
    assert plain._sgd_step.flat is None
    for seed in (1, 2):
        for learner in (flat, plain):
            learner.train(learner.prepare_batch(_trajectories(learner.cfg, VECTOR, seed)))
    assert not flat._sgd_step.flat.enabled
    assert any(line.startswith("Flat Adam switched off: 2 of") for line in _lines(caplog))
    for (name, a), b in zip(flat.actor_critic.named_parameters(), plain.actor_critic.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)


# ---- fused loss ------------------------------------------------------------------------------------------------


class ColumnLogProbs:
    """A distribution whose log-probs come back as a column, one ``[B, 1]`` row per sample."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def log_prob(self, actions):
        return self.inner.log_prob(actions).unsqueeze(-1)


class ColumnActorCritic(ActorCriticSharedWeights):
    def action_distribution(self):
        return ColumnLogProbs(super().action_distribution())


@needs_private_paths
def test_the_fused_loss_is_used_for_user_models_that_pass_and_skipped_otherwise(caplog) -> None:
    global_model_factory().register_encoder_factory(ReshapeEncoder)
    assert _learner(IMAGE)._ppo_loss is ppo_loss
    assert "Learner: fused PPO loss used for encoder ReshapeEncoder: it passed the start-up check" in _lines(caplog)
    reset_global_context()
    global_model_factory().register_actor_critic_factory(
        lambda cfg, obs_space, action_space: ColumnActorCritic(global_model_factory(), obs_space, action_space, cfg)
    )
    assert _learner(VECTOR)._ppo_loss is ppo_loss_autograd
    assert _lines(caplog)[-1] == (
        "Learner: fused PPO loss skipped for actor-critic ColumnActorCritic: its log-probs are (4, 1) and its values "
        "(4,); the fused loss is proven for one of each per sample, (4,)"
    )


# ---- GRU BPTT kernel ---------------------------------------------------------------------------------------------


def _gru_cores(learner: Learner) -> list:
    return [m for m in learner.actor_critic.modules() if hasattr(m, "gru_bptt")]


def _recurrent_cfg(**overrides):
    settings = dict(use_rnn=True, rnn_type="gru", rnn_size=16, recurrence=8, rollout=8, batch_size=16)
    return _cfg(**{**settings, **overrides})


@needs_private_paths
def test_the_librarys_gru_core_trains_through_the_kernel_and_the_log_says_so(monkeypatch, caplog) -> None:
    learner = _learner(VECTOR, _recurrent_cfg())
    assert [core.gru_bptt for core in _gru_cores(learner)] == [True]
    assert "Learner: GRU BPTT kernel used (the library's single-layer GRU core)" in _lines(caplog)

    monkeypatch.setenv(DISABLE_ENV, "gru_bptt")
    assert [core.gru_bptt for core in _gru_cores(_learner(VECTOR, _recurrent_cfg()))] == [False]
    assert f"Learner: GRU BPTT kernel skipped: switched off by {DISABLE_ENV}" in _lines(caplog)
    monkeypatch.delenv(DISABLE_ENV)

    caplog.clear()
    assert [core.gru_bptt for core in _gru_cores(_learner(VECTOR, _recurrent_cfg(rnn_num_layers=2)))] == [False]
    assert "Learner: GRU BPTT kernel skipped: --rnn_num_layers=2 (the kernel is for one layer)" in _lines(caplog)
    caplog.clear()
    _learner(VECTOR, _recurrent_cfg(rnn_type="lstm"))
    assert not [line for line in _lines(caplog) if "GRU BPTT" in line]  # no GRU, no line


@needs_private_paths
def test_training_through_the_kernel_matches_training_through_nn_gru(monkeypatch) -> None:
    """Two SGD epochs on episodes cut by dones: the same losses, and weights within float32 rounding."""
    cfg = _recurrent_cfg(num_epochs=2)
    trajectories = _trajectories(cfg, VECTOR)
    trajectories["dones"][:, 3] = 1.0
    trajectories["dones"][1, 5] = 1.0
    trajectories["rnn_states"].normal_(generator=torch.Generator().manual_seed(2))
    results = {}
    for kernel in (True, False):
        if not kernel:
            monkeypatch.setenv(DISABLE_ENV, "gru_bptt")
        learner = _learner(VECTOR, cfg)
        assert [core.gru_bptt for core in _gru_cores(learner)] == [kernel]
        stats = learner.train(learner.prepare_batch(trajectories))
        results[kernel] = stats, {name: p.detach().clone() for name, p in learner.actor_critic.named_parameters()}
    (fast_stats, fast_weights), (plain_stats, plain_weights) = results[True], results[False]
    assert fast_stats["loss"] == pytest.approx(plain_stats["loss"], rel=1e-5)
    for name, expected in plain_weights.items():
        torch.testing.assert_close(fast_weights[name], expected, rtol=1e-5, atol=1e-6, msg=name)
    moved = plain_weights["core.core.weight_hh_l0"] - _learner(VECTOR, cfg).actor_critic.core.core.weight_hh_l0
    assert moved.abs().max() > 1e-4  # the GRU's weights did train


def test_with_torchs_private_paths_off_the_librarys_models_are_checked_and_keep_nn_gru(
    public_torch_paths, caplog
) -> None:
    """Without torch's private names no module is taken for the library's own: the conv model's channels-last goes
    through its start-up check, and the GRU core keeps ``nn.GRU`` (the kernel is for the library's own core)."""
    learner = _learner(IMAGE)
    assert learner.channels_last
    assert "Learner: channels-last used for actor-critic ActorCriticSharedWeights: it passed the start-up check" in (
        _lines(caplog)
    )
    recurrent = _learner(VECTOR, _recurrent_cfg())
    assert [core.gru_bptt for core in _gru_cores(recurrent)] == [False]
    stats = recurrent.train(recurrent.prepare_batch(_trajectories(recurrent.cfg, VECTOR)))
    assert np.isfinite(stats["loss"])
