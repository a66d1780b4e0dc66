"""The GRU BPTT kernel (``model/gru_bptt.py``) against ``nn.GRU`` on packed episode pieces, and where it applies."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_sequence

from sample_factory.algo.learning.bptt import core_forward_bptt, split_into_episode_pieces
from sample_factory.model.core import default_make_core_func
from sample_factory.model.gru_bptt import packed_gru, packed_gru_applies

# gradients are the same sums grouped differently: float32 rounding, ~1e-7 of their scale (a wrong term is O(1))
GRADIENT_TOLERANCE = 1e-5


def _pieces(dones: torch.Tensor, recurrence: int, features: torch.Tensor) -> tuple[PackedSequence, int]:
    pieces = split_into_episode_pieces(dones, recurrence)
    packed = PackedSequence(
        features[pieces.packed_order], pieces.batch_sizes, pieces.sorted_indices, pieces.unsorted_indices
    )
    return packed, pieces.piece_starts.shape[0]


def _run(rnn: nn.GRU, packed: PackedSequence, h0: torch.Tensor, kernel: bool, grad_y, grad_hn):
    """Outputs, final states and every gradient of ``sum(y * grad_y) + sum(h_n * grad_hn)``."""
    rnn.zero_grad()
    data = packed.data.detach().clone().requires_grad_()
    h = h0.detach().clone().requires_grad_()
    packed = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    if kernel:
        y, h_n = packed_gru(rnn, packed, h)
    else:
        y, h_n = rnn(packed, h.unsqueeze(0))
        h_n = h_n.squeeze(0)
    ((y.data * grad_y).sum() + (h_n * grad_hn).sum()).backward()
    grads = {"input": data.grad, "h0": h.grad, **{name: p.grad.clone() for name, p in rnn.named_parameters()}}
    return y, h_n, grads


DONE_PATTERNS = {
    "no dones": lambda n: torch.zeros(n),
    "a few dones": lambda n: (torch.rand(n, generator=torch.Generator().manual_seed(3)) < 0.05).float(),
    "many dones": lambda n: (torch.rand(n, generator=torch.Generator().manual_seed(4)) < 0.4).float(),
    "every step": lambda n: torch.ones(n),
}


@pytest.mark.parametrize("pattern", sorted(DONE_PATTERNS))
@pytest.mark.parametrize(("input_size", "hidden"), [(5, 4), (48, 64)])
def test_outputs_bitwise_and_gradients_of_nn_gru(pattern, input_size, hidden):
    torch.manual_seed(0)
    recurrence, segments = 8, 6
    rnn = nn.GRU(input_size, hidden)
    packed, num_pieces = _pieces(DONE_PATTERNS[pattern](segments * recurrence), recurrence,
                                 torch.randn(segments * recurrence, input_size))  # fmt: skip
    h0 = torch.randn(num_pieces, hidden) * 0.5
    grad_y, grad_hn = torch.randn(packed.data.shape[0], hidden), torch.randn(num_pieces, hidden)

    y_ref, hn_ref, grads_ref = _run(rnn, packed, h0, False, grad_y, grad_hn)
    y, h_n, grads = _run(rnn, packed, h0, True, grad_y, grad_hn)

    assert torch.equal(y.data, y_ref.data) and torch.equal(h_n, hn_ref)  # the same operations in the same order
    assert torch.equal(y.batch_sizes, y_ref.batch_sizes) and torch.equal(y.unsorted_indices, y_ref.unsorted_indices)
    assert grads.keys() == grads_ref.keys()
    for name, expected in grads_ref.items():
        scale = expected.abs().max().item()
        assert scale > 0, name
        assert (grads[name] - expected).abs().max().item() <= GRADIENT_TOLERANCE * scale, name


def test_only_the_plain_single_layer_float32_cpu_gru_qualifies():
    packed = pack_sequence([torch.randn(3, 5), torch.randn(2, 5)])
    h0 = torch.randn(2, 4)
    assert packed_gru_applies(nn.GRU(5, 4), packed, h0)
    assert not packed_gru_applies(nn.GRU(5, 4, num_layers=2), packed, h0)
    assert not packed_gru_applies(nn.GRU(5, 4, bias=False), packed, h0)
    assert not packed_gru_applies(nn.GRU(5, 4, bidirectional=True), packed, h0)
    assert not packed_gru_applies(nn.LSTM(5, 4), packed, h0)
    double = pack_sequence([torch.randn(3, 5, dtype=torch.float64)])
    assert not packed_gru_applies(nn.GRU(5, 4).double(), double, h0[:1].double())

    class MyGRU(nn.GRU):
        pass

    assert not packed_gru_applies(MyGRU(5, 4), packed, h0)


def _bptt_inputs(cfg_core, batch: int = 48, recurrence: int = 8):
    generator = torch.Generator().manual_seed(7)
    features = torch.randn(batch, 5, generator=generator)
    states = torch.randn(batch, cfg_core.rnn_state_size(), generator=generator)
    dones = (torch.rand(batch, generator=generator) < 0.1).float()
    return features, states, dones


def test_the_core_uses_the_kernel_only_when_switched_on_and_unhooked(make_cfg, monkeypatch):
    core = default_make_core_func(make_cfg(rnn_type="gru", rnn_num_layers=1, rnn_size=4), 5)
    calls = []
    import sample_factory.model.core as core_module

    real = core_module.packed_gru
    monkeypatch.setattr(core_module, "packed_gru", lambda *args: (calls.append(1), real(*args))[1])
    features, states, dones = _bptt_inputs(core)
    actor_critic = type("AC", (), {"cfg": make_cfg(use_rnn=True), "forward_core": core})()

    plain = core_forward_bptt(actor_critic, features, states, dones, 8)
    assert calls == []  # off by default: only the learner switches it on
    core.gru_bptt = True
    fast = core_forward_bptt(actor_critic, features, states, dones, 8)
    assert calls == [1] and torch.equal(fast, plain)

    seen = []
    handle = core.core.register_forward_hook(lambda module, args, output: seen.append(1))
    core_forward_bptt(actor_critic, features, states, dones, 8)
    assert calls == [1] and seen == [1]  # a hook on the GRU: the module runs, and its hook sees it
    handle.remove()
    core.core = nn.GRU(5, 4, bias=False)  # a replaced GRU the kernel does not cover
    core_forward_bptt(actor_critic, features, states, dones, 8)
    assert calls == [1]
