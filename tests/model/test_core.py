from __future__ import annotations

import pytest
import torch
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

from sample_factory.model.core import ModelCoreIdentity, ModelCoreRNN, default_make_core_func
from sample_factory.model.direct_calls import call_forward_directly, original_class
from sample_factory.model.model_utils import get_rnn_size

RNN_CASES = [("gru", 1), ("gru", 2), ("lstm", 1), ("lstm", 3)]


def _core(make_cfg, rnn_type: str, num_layers: int, input_size: int = 5) -> ModelCoreRNN:
    cfg = make_cfg(rnn_type=rnn_type, rnn_num_layers=num_layers, rnn_size=4)
    core = default_make_core_func(cfg, input_size)
    assert isinstance(core, ModelCoreRNN) and core.get_out_size() == 4
    assert core.rnn_state_size() == get_rnn_size(cfg)
    return core


@pytest.mark.parametrize(("rnn_type", "num_layers"), RNN_CASES)
def test_single_step_shapes(make_cfg, rnn_type, num_layers):
    core = _core(make_cfg, rnn_type, num_layers)
    states = torch.randn(3, core.rnn_state_size())
    out, new_states = core(torch.randn(3, 5), states)
    assert out.shape == (3, 4) and new_states.shape == states.shape
    assert not torch.allclose(new_states, states)


@pytest.mark.parametrize(("rnn_type", "num_layers"), RNN_CASES)
def test_flat_layout_puts_last_layer_hidden_where_documented(make_cfg, rnn_type, num_layers):
    """Layout ``[h_0..h_{L-1}(, c_0..c_{L-1})]``: the last layer's h is the output of the step."""
    core = _core(make_cfg, rnn_type, num_layers)
    out, new_states = core(torch.randn(3, 5), torch.randn(3, core.rnn_state_size()))
    h_last_layer = new_states[:, (num_layers - 1) * 4 : num_layers * 4]
    torch.testing.assert_close(h_last_layer, out)


def test_lstm_state_order_matches_torch(make_cfg):
    core = _core(make_cfg, "lstm", 2)
    h, c = torch.randn(2, 3, 4), torch.randn(2, 3, 4)  # [L, B, H]
    flat = torch.cat([h.transpose(0, 1).reshape(3, 8), c.transpose(0, 1).reshape(3, 8)], dim=1)
    x = torch.randn(3, 5)
    expected_out, (h_new, c_new) = core.core(x.unsqueeze(0), (h, c))
    out, new_flat = core(x, flat)
    torch.testing.assert_close(out, expected_out.squeeze(0))
    torch.testing.assert_close(new_flat[:, 8:], c_new.transpose(0, 1).reshape(3, 8))


def _step_through(core, inputs, dones, states):
    """Reference rollout: one step at a time, states zeroed after a done. inputs [T, E, F], dones [T, E]."""
    outputs = []
    for t in range(inputs.shape[0]):
        out, states = core(inputs[t], states)
        outputs.append(out)
        states = states * (1.0 - dones[t]).unsqueeze(1)
    return torch.stack(outputs), states  # [T, E, H], [E, S]


def _episodes(dones_env: torch.Tensor) -> list[tuple[int, int]]:
    """[start, end) step ranges of the episodes of one env's trajectory, split after each done."""
    bounds, start = [], 0
    for t, done in enumerate(dones_env.tolist()):
        if done:
            bounds.append((start, t + 1))
            start = t + 1
    if start < len(dones_env):
        bounds.append((start, len(dones_env)))
    return bounds


@pytest.mark.parametrize(("rnn_type", "num_layers"), RNN_CASES)
def test_packed_bptt_equals_stepping_with_resets_at_dones(make_cfg, rnn_type, num_layers):
    core = _core(make_cfg, rnn_type, num_layers)
    num_steps, num_envs = 7, 3
    inputs = torch.randn(num_steps, num_envs, 5)
    dones = torch.zeros(num_steps, num_envs)
    dones[2, 0] = dones[4, 0] = dones[0, 1] = dones[6, 2] = 1.0
    initial_states = torch.randn(num_envs, core.rnn_state_size())
    expected_out, _ = _step_through(core, inputs, dones, initial_states)

    sequences, seq_states, seq_index = [], [], []
    for env in range(num_envs):
        for start, end in _episodes(dones[:, env]):
            sequences.append(inputs[start:end, env])
            seq_states.append(initial_states[env] if start == 0 else torch.zeros(core.rnn_state_size()))
            seq_index.append((env, start, end))
    packed = pack_sequence(sequences, enforce_sorted=False)
    out_packed, final_states = core(packed, torch.stack(seq_states))
    padded, lengths = pad_packed_sequence(out_packed)  # [T_max, num_seqs, H]

    for i, (env, start, end) in enumerate(seq_index):
        assert lengths[i] == end - start
        torch.testing.assert_close(padded[: end - start, i], expected_out[start:end, env])
        # the state after the sequence's last step is the stepped state before any reset
        _, state_after = _step_through(
            core, inputs[start:end, env : env + 1], torch.zeros(end - start, 1), seq_states[i][None]
        )
        torch.testing.assert_close(final_states[i : i + 1], state_after)


def test_packed_sequence_gradients_reach_inputs(make_cfg):
    core = _core(make_cfg, "gru", 1)
    x = torch.randn(6, 5, requires_grad=True)
    out, _ = core(pack_sequence([x[:4], x[4:]], enforce_sorted=False), torch.zeros(2, 4))
    out.data.sum().backward()
    assert x.grad is not None and torch.all(x.grad.abs().sum(dim=1) > 0)


def test_identity_core_passes_everything_through(make_cfg):
    core = default_make_core_func(make_cfg(use_rnn=False), 6)
    assert isinstance(core, ModelCoreIdentity) and core.get_out_size() == 6
    x, states = torch.randn(2, 6), torch.randn(2, 1)
    out, new_states = core(x, states)
    assert out is x and new_states is states


def test_wrong_state_width_names_the_flags(make_cfg):
    core = _core(make_cfg, "gru", 1)
    with pytest.raises(ValueError, match="--rnn_size"):
        core(torch.randn(2, 5), torch.randn(2, 3))


def _module_step(core: ModelCoreRNN, x: torch.Tensor, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One step through ``nn.GRU`` itself, as ``forward`` takes it with autograd on."""
    out, hidden = core.core(x.unsqueeze(0), core.unflatten_states(states))
    return out.squeeze(0), core.flatten_states(hidden)


@pytest.mark.parametrize("batch", [1, 4, 33])
@pytest.mark.parametrize("bias", [True, False])
def test_gru_step_without_autograd_is_bitwise_the_module_step(make_cfg, batch, bias):
    cfg = make_cfg(rnn_type="gru", rnn_num_layers=1, rnn_size=64)
    core = default_make_core_func(cfg, 48)
    if not bias:
        core.core = torch.nn.GRU(48, 64, bias=False)
    x, states = torch.randn(batch, 48), torch.randn(batch, 64)
    with torch.no_grad():
        expected_out, expected_states = _module_step(core, x, states)
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            assert core._gru_step_applies(x, states)
            out, new_states = core(x, states)
            assert torch.equal(out, expected_out) and torch.equal(new_states, expected_states)
            out.add_(1.0)  # the output is not the states' memory: a decoder may work on it in place
            assert torch.equal(new_states, expected_states)


def test_gru_step_keeps_the_module_with_autograd_layers_hooks_or_packed_input(make_cfg):
    core = default_make_core_func(make_cfg(rnn_type="gru", rnn_num_layers=1, rnn_size=4), 5)
    x, states = torch.randn(3, 5), torch.randn(3, 4)
    assert not core._gru_step_applies(x, states)  # autograd on: the learner's steps
    with torch.no_grad():
        assert not core._gru_step_applies(pack_sequence([torch.randn(2, 5)]), states[:1])
        assert not core._gru_step_applies(x, torch.randn(3, 8))  # wrong width: unflatten_states names it
        two_layers = default_make_core_func(make_cfg(rnn_type="gru", rnn_num_layers=2, rnn_size=4), 5)
        assert not two_layers._gru_step_applies(x, torch.randn(3, 8))
        lstm = default_make_core_func(make_cfg(rnn_type="lstm", rnn_num_layers=1, rnn_size=4), 5)
        assert not lstm._gru_step_applies(x, torch.randn(3, 8))
        seen = []
        core.core.register_forward_hook(lambda module, args, output: seen.append(1))
        assert not core._gru_step_applies(x, states)
        core(x, states)
        assert seen == [1]
        with pytest.raises(ValueError, match="rnn_states have 8 columns"):
            core(x, torch.randn(3, 8))


def test_gru_step_keeps_the_module_under_a_global_hook_or_an_instance_forward(make_cfg):
    core = default_make_core_func(make_cfg(rnn_type="gru", rnn_num_layers=1, rnn_size=4), 5)
    x, states = torch.randn(3, 5), torch.randn(3, 4)
    seen = []
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda module, args, output: seen.append(type(module).__name__)
    )
    try:
        with torch.no_grad():
            assert not core._gru_step_applies(x, states)
            core(x, states)
    finally:
        handle.remove()
    assert "GRU" in seen  # the hook saw the GRU's step
    with torch.no_grad():
        assert core._gru_step_applies(x, states)  # the hook removed: the cell again

        plain_forward = core.core.forward
        core.core.forward = lambda *args: (seen.append("instance forward"), plain_forward(*args))[1]
        assert not core._gru_step_applies(x, states)
        core(x, states)
    assert seen[-1] == "instance forward"


def test_gru_step_applies_to_the_inference_workers_direct_call_gru(make_cfg):
    core = default_make_core_func(make_cfg(rnn_type="gru", rnn_num_layers=1, rnn_size=4), 5)
    x, states = torch.randn(3, 5), torch.randn(3, 4)
    with torch.no_grad():
        expected_out, expected_states = core(x, states)
        assert call_forward_directly(core)
        assert type(core.core) is not torch.nn.GRU and original_class(core.core) is torch.nn.GRU
        assert core._gru_step_applies(x, states)
        out, new_states = core(x, states)
    assert torch.equal(out, expected_out) and torch.equal(new_states, expected_states)
