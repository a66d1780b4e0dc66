"""build_rnn_inputs -> recurrent core -> build_core_out_from_seq equals stepping the core with resets at dones."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor, nn

from sample_factory.algo.learning.rnn_utils import build_core_out_from_seq, build_rnn_inputs

T, NUM_SEGMENTS, D, H = 6, 4, 5, 7


def _batch(seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(NUM_SEGMENTS * T, D, generator=gen)
    rnn_states = torch.randn(NUM_SEGMENTS * T, H, generator=gen)
    dones = torch.zeros(NUM_SEGMENTS * T)
    # segment 0: no done; 1: a done mid-segment; 2: two dones, one of them on the last step; 3: done on step 0
    for index in (T + 2, 2 * T + 1, 2 * T + 3, 3 * T - 1, 3 * T):
        dones[index] = 1.0
    return x, dones, rnn_states


def _stepped(cell: nn.GRUCell, x: Tensor, dones: Tensor, rnn_states: Tensor) -> Tensor:
    """The reference: one step at a time from each segment's stored state, a zero state after every done."""
    outputs = []
    for start in range(0, x.shape[0], T):
        h = rnn_states[start : start + 1]
        for i in range(start, start + T):
            h = cell(x[i : i + 1], h)
            outputs.append(h)
            if dones[i]:
                h = torch.zeros_like(h)
    return torch.cat(outputs)


def _gru_and_cell(seed: int = 3) -> tuple[nn.GRU, nn.GRUCell]:
    torch.manual_seed(seed)
    gru = nn.GRU(D, H)
    cell = nn.GRUCell(D, H)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(gru, f"{name}_l0"))
    return gru, cell


def test_packed_gru_equals_stepping_with_resets_at_dones() -> None:
    x, dones, rnn_states = _batch()
    gru, cell = _gru_and_cell()
    x_seq, initial_states, inverted_select_inds = build_rnn_inputs(x, dones, rnn_states, T)
    packed_out, _ = gru(x_seq, initial_states.unsqueeze(0).contiguous())
    core_out = build_core_out_from_seq(packed_out, inverted_select_inds)
    with torch.no_grad():
        expected = _stepped(cell, x, dones, rnn_states)
    assert core_out.shape == (NUM_SEGMENTS * T, H)
    torch.testing.assert_close(core_out, expected, rtol=1e-5, atol=1e-6)


def test_pieces_and_their_initial_states() -> None:
    x, dones, rnn_states = _batch()
    x_seq, initial_states, inverted_select_inds = build_rnn_inputs(x, dones, rnn_states, T)
    # pieces: seg0 [6]; seg1 [3, 3]; seg2 [2, 2, 2]; seg3 [1, 5] -> 8 pieces, longest 6
    assert initial_states.shape == (8, H)
    assert x_seq.batch_sizes.tolist() == [8, 7, 4, 2, 2, 1]  # pieces longer than k, k = 0..5
    segment_starts = rnn_states[[0, T, 2 * T, 3 * T]]
    torch.testing.assert_close(initial_states[[0, 1, 3, 6]], segment_starts)
    assert initial_states[[2, 4, 5, 7]].abs().sum() == 0  # pieces that begin after a done start from zero
    # unpacking the packed inputs themselves gives back the rows in their original order
    torch.testing.assert_close(build_core_out_from_seq(x_seq, inverted_select_inds), x)


def test_rows_not_a_whole_number_of_segments_are_refused() -> None:
    x, dones, rnn_states = _batch()
    with pytest.raises(ValueError, match="multiple of the recurrence"):
        build_rnn_inputs(x[:-1], dones[:-1], rnn_states[:-1], T)
    with pytest.raises(ValueError, match="multiple of the recurrence"):
        build_rnn_inputs(x, dones[:-T], rnn_states, T)
