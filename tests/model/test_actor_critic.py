"""Every observation x action x core x weight-sharing combination builds, runs forward/backward, returns API shapes."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import pack_sequence

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.model.action_distributions import calc_num_action_parameters, calc_num_actions
from sample_factory.model.actor_critic import (
    ActorCritic,
    ActorCriticSeparateWeights,
    ActorCriticSharedWeights,
    create_actor_critic,
)
from sample_factory.model.encoder import Encoder
from sample_factory.model.model_utils import get_rnn_size

BATCH = 4
IMAGE = gym.spaces.Box(0, 255, (3, 36, 36), dtype=np.uint8)
VECTOR = gym.spaces.Box(-1.0, 1.0, (5,), dtype=np.float32)
OBS_SPACES = {
    "vector": VECTOR,
    "image": IMAGE,
    "dict": gym.spaces.Dict({"image": IMAGE, "vector": VECTOR}),
}
ACTION_SPACES = {
    "discrete": gym.spaces.Discrete(4),
    "box": gym.spaces.Box(-1.0, 1.0, (3,), dtype=np.float32),
    "tuple": gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)]),
    "multi_discrete": gym.spaces.MultiDiscrete([3, 2]),
}
CORES = {"gru": dict(rnn_type="gru"), "lstm": dict(rnn_type="lstm"), "none": dict(use_rnn=False)}


def sample_obs(obs_space: gym.Space, batch: int = BATCH) -> dict[str, torch.Tensor]:
    """A batch of observations as the samplers deliver them: a dict, a plain space under ``"obs"``."""
    spaces = obs_space.spaces if isinstance(obs_space, gym.spaces.Dict) else {"obs": obs_space}
    return {key: torch.as_tensor(np.stack([space.sample() for _ in range(batch)])) for key, space in spaces.items()}


def build(make_cfg, obs_space, action_space, **overrides) -> tuple[ActorCritic, torch.Tensor]:
    cfg = make_cfg(**overrides)
    model = create_actor_critic(cfg, obs_space, action_space)
    return model, torch.randn(BATCH, get_rnn_size(cfg))


@pytest.mark.parametrize(
    ("obs_name", "action_name", "core_name", "shared"),
    list(itertools.product(OBS_SPACES, ACTION_SPACES, CORES, [True, False])),
)
def test_forward_backward_shapes(make_cfg, obs_name, action_name, core_name, shared):
    obs_space, action_space = OBS_SPACES[obs_name], ACTION_SPACES[action_name]
    model, rnn_states = build(make_cfg, obs_space, action_space, actor_critic_share_weights=shared, **CORES[core_name])
    assert isinstance(model, ActorCriticSharedWeights if shared else ActorCriticSeparateWeights)

    result = model(model.normalize_obs(sample_obs(obs_space)), rnn_states)

    num_actions = calc_num_actions(action_space)
    assert set(result.keys()) == {"values", "action_logits", "actions", "log_prob_actions", "new_rnn_states"}
    assert result["values"].shape == (BATCH,)
    assert result["action_logits"].shape == (BATCH, calc_num_action_parameters(action_space))
    discrete = action_name == "discrete"
    assert result["actions"].shape == ((BATCH,) if discrete else (BATCH, num_actions))
    all_discrete = action_name in ("discrete", "multi_discrete")
    assert result["actions"].dtype == (torch.int64 if all_discrete else torch.float32)
    assert result["log_prob_actions"].shape == (BATCH,)
    assert result["new_rnn_states"].shape == rnn_states.shape
    assert torch.isfinite(result["log_prob_actions"]).all()
    if core_name == "none":
        assert result["new_rnn_states"] is rnn_states

    loss = result["values"].sum() + result["log_prob_actions"].sum() + model.action_distribution().entropy().sum()
    loss.backward()
    no_grad = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert no_grad == []


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_learner_bptt_path_equals_inference_steps(make_cfg, shared, rnn_type):
    """forward_head over all samples, forward_core over packed sequences, forward_tail on the packed data."""
    obs_space, action_space = OBS_SPACES["vector"], ACTION_SPACES["discrete"]
    model, _ = build(
        make_cfg, obs_space, action_space, actor_critic_share_weights=shared, rnn_type=rnn_type, rnn_num_layers=2
    )
    model.eval()
    lengths = [5, 3]
    obs = [model.normalize_obs(sample_obs(obs_space, n)) for n in lengths]
    initial_states = torch.randn(len(lengths), get_rnn_size(model.cfg))

    expected_values, expected_logits, expected_states = [], [], []
    for i, n in enumerate(lengths):
        states = initial_states[i : i + 1]
        for t in range(n):
            step = model({k: v[t : t + 1] for k, v in obs[i].items()}, states)
            states = step["new_rnn_states"]
            expected_values.append(step["values"])
            expected_logits.append(step["action_logits"])
        expected_states.append(states)

    heads = [model.forward_head(o) for o in obs]  # per sequence [n, F]
    packed = pack_sequence(heads, enforce_sorted=False)
    core_out, final_states = model.forward_core(packed, initial_states)
    padded_order = [(i, t) for i, n in enumerate(lengths) for t in range(n)]
    # packed data is time-major over the length-sorted sequences; map each (seq, t) to its packed row
    rows = _packed_rows(packed.batch_sizes, packed.sorted_indices, padded_order)
    tail = model.forward_tail(core_out.data[rows], values_only=False, sample_actions=False)

    torch.testing.assert_close(tail["values"], torch.cat(expected_values))
    torch.testing.assert_close(tail["action_logits"], torch.cat(expected_logits))
    torch.testing.assert_close(final_states, torch.cat(expected_states))
    assert "actions" not in tail


def _packed_rows(batch_sizes, sorted_indices, order: list[tuple[int, int]]) -> torch.Tensor:
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), batch_sizes.cumsum(0)[:-1]])
    rank = {int(seq): r for r, seq in enumerate(sorted_indices)}
    return torch.tensor([int(offsets[t]) + rank[seq] for seq, t in order])


def test_values_only_returns_only_values(make_cfg):
    model, states = build(make_cfg, VECTOR, ACTION_SPACES["discrete"])
    result = model(model.normalize_obs(sample_obs(VECTOR)), states, values_only=True)
    assert set(result.keys()) == {"values", "new_rnn_states"}


def test_action_mask_restricts_sampled_actions(make_cfg):
    space = gym.spaces.Dict({"obs": VECTOR, "action_mask": gym.spaces.Box(0, 1, (4,), dtype=np.int8)})
    model, states = build(make_cfg, space, ACTION_SPACES["discrete"])
    obs = sample_obs(space, 64)
    obs["action_mask"] = torch.zeros(64, 4, dtype=torch.int8)
    obs["action_mask"][:, 2] = 1
    normalized = model.normalize_obs(obs)
    assert normalized["action_mask"] is obs["action_mask"]
    result = model(normalized, torch.zeros(64, get_rnn_size(model.cfg)), action_mask=normalized["action_mask"])
    assert torch.all(result["actions"] == 2)
    torch.testing.assert_close(result["log_prob_actions"], torch.zeros(64), atol=1e-5, rtol=0)


def test_separate_weights_keep_actor_and_critic_states_apart(make_cfg):
    model, states = build(make_cfg, VECTOR, ACTION_SPACES["discrete"], actor_critic_share_weights=False)
    obs = model.normalize_obs(sample_obs(VECTOR))
    half = states.shape[1] // 2
    critic_changed = states.clone()
    critic_changed[:, half:] += 1.0
    a, b = model(obs, states), model(obs, critic_changed)
    torch.testing.assert_close(a["action_logits"], b["action_logits"])
    torch.testing.assert_close(a["new_rnn_states"][:, :half], b["new_rnn_states"][:, :half])
    assert not torch.allclose(a["values"], b["values"])


def test_non_adaptive_stddev_starts_at_initial_stddev(make_cfg):
    box = ACTION_SPACES["box"]
    model, states = build(make_cfg, VECTOR, box, adaptive_stddev=False, initial_stddev=0.5)
    result = model(model.normalize_obs(sample_obs(VECTOR)), states)
    log_stds = result["action_logits"][:, 3:]
    torch.testing.assert_close(log_stds, torch.full((BATCH, 3), float(np.log(0.5))))
    assert model.summaries()["policy_stddev"] == pytest.approx(0.5)


def test_adaptive_stddev_depends_on_the_state(make_cfg):
    model, states = build(make_cfg, VECTOR, ACTION_SPACES["box"], adaptive_stddev=True)
    result = model(model.normalize_obs(sample_obs(VECTOR)), states)
    log_stds = result["action_logits"][:, 3:]
    assert not torch.allclose(log_stds[0], log_stds[1])
    assert model.summaries()["policy_stddev"] > 0


def test_continuous_tanh_scale_bounds_the_means(make_cfg):
    model, states = build(make_cfg, VECTOR, ACTION_SPACES["box"], continuous_tanh_scale=0.01)
    model(model.normalize_obs(sample_obs(VECTOR)), states)
    assert model.action_distribution().means.abs().max() <= 0.01


def test_policy_output_shapes():
    assert ActorCritic.policy_output_shapes(1, 4) == [
        ("actions", [1]),
        ("action_logits", [4]),
        ("log_prob_actions", []),
        ("values", []),
        ("policy_version", []),
    ]
    assert ActorCritic.policy_output_shapes(3, 6)[0] == ("actions", [3])


def _is_orthogonal(w: torch.Tensor, gain: float) -> bool:
    w = w.reshape(w.shape[0], -1)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    return torch.allclose(gram, gain**2 * torch.eye(gram.shape[0]), atol=1e-4)


def _within_torch_bound(w: torch.Tensor, fan_in: int | None = None) -> bool:
    """Within the bound of torch's default init, 1/sqrt(fan_in) (an RNN's fan-in is its hidden size)."""
    fan_in = fan_in or w[0].numel()
    return bool(w.abs().max() <= fan_in**-0.5) and not _is_orthogonal(w, 1.0)


def test_the_scheme_reaches_the_heads_while_the_library_parts_keep_torch_init(make_cfg):
    """The weight distributions Sample Factory 2.1.1 starts from with the same flags (see keep_torch_init)."""
    model, _ = build(make_cfg, VECTOR, ACTION_SPACES["discrete"], policy_init_gain=1.5, decoder_mlp_layers=[16])
    assert _is_orthogonal(model.critic_linear.weight, 1.5)
    assert _is_orthogonal(model.action_parameterization.distribution_linear.weight, 1.5)
    library = [m.weight for m in [*model.encoder.modules(), *model.decoder.modules()] if isinstance(m, torch.nn.Linear)]
    assert len(library) == 3 and all(_within_torch_bound(w) for w in library)
    rnn = model.core.core
    assert all(_within_torch_bound(w, rnn.hidden_size) for w in (rnn.weight_ih_l0, rnn.weight_hh_l0))
    assert all(torch.all(m.bias == 0) for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert torch.any(model.core.core.bias_hh_l0 != 0)  # the RNN's biases are torch's too


@pytest.mark.parametrize(("arch", "orthogonal"), [("convnet_simple", False), ("resnet_impala", True)])
def test_conv_encoders_initialised_as_in_sample_factory_2(make_cfg, arch, orthogonal):
    """The plain conv encoders keep torch's weights, the ResNet encoder gets the scheme."""
    model, _ = build(make_cfg, IMAGE, ACTION_SPACES["discrete"], encoder_conv_architecture=arch)
    layers = [m for m in model.encoder.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    assert layers and all(torch.all(m.bias == 0) for m in layers)
    if orthogonal:
        assert all(_is_orthogonal(m.weight, 1.0) for m in layers)
    else:
        assert all(_within_torch_bound(m.weight) for m in layers)


def test_a_users_own_layers_get_the_scheme(make_cfg):
    class UserEncoder(Encoder):
        def __init__(self, cfg, obs_space):
            super().__init__(cfg)
            self.linear = torch.nn.Linear(obs_space["obs"].shape[0], 24)

        def forward(self, obs_dict):
            return self.linear(obs_dict["obs"])

        def get_out_size(self):
            return 24

    global_model_factory().register_encoder_factory(UserEncoder)
    model, _ = build(make_cfg, VECTOR, ACTION_SPACES["discrete"], policy_init_gain=1.5)
    assert _is_orthogonal(model.encoder.linear.weight, 1.5) and torch.all(model.encoder.linear.bias == 0)


def test_one_dimensional_box_keeps_its_action_dimension(make_cfg):
    """Actions keep the distribution's layout, the one the trajectory buffers are allocated with."""
    model, states = build(make_cfg, VECTOR, gym.spaces.Box(-2.0, 2.0, (1,), dtype=np.float32))
    result = model(model.normalize_obs(sample_obs(VECTOR)), states)
    assert result["actions"].shape == (BATCH, 1) and result["action_logits"].shape == (BATCH, 2)
