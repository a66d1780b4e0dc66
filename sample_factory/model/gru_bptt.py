"""Backpropagation through time for a single-layer GRU over packed episode pieces, with a hand-written backward.

The learner runs its GRU over a ``PackedSequence`` of episode pieces (``algo/learning/bptt.py``). On the CPU,
``nn.GRU`` records every time step as its own small autograd graph: its backward accumulates each weight gradient
one time step at a time (a ``[3H, b_t] x [b_t, H]`` product per step, with ``b_t`` pieces alive, often 10-30) and
zero-fills a full-size gradient buffer for every step's slice of the input projections. Here the forward pass keeps
the gates of every step, and the backward pass walks back through time computing only what each step needs, the
gradient of the hidden state (one ``[b_t, 3H] x [3H, H]`` product), then forms every weight gradient in one product
over all the steps at once. Doom's GRU of 512 units over a 512-sample minibatch: the backward pass takes half the
time of ``nn.GRU``'s (``tests/model/test_gru_bptt.py`` holds the equality; ``docs/learner.md#fast-paths``).

The maths is ``nn.GRU``'s (gates ordered r, z, n as in its weights)::

    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
    z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
    h' = (1 - z) * n + z * h  =  (h - n) * z + n

The forward pass evaluates it with the same operations in the same order as torch's GRU cell; the gradients are
sums over the same terms grouped differently, so they agree with ``nn.GRU``'s to float32 rounding (about 1e-7 of
their scale).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence


class _PackedGRUFunction(torch.autograd.Function):
    """Outputs ``[N, H]`` of a single-layer GRU over packed rows (time-major, longest piece first)."""

    @staticmethod
    def forward(ctx, x, h0, w_ih, w_hh, b_ih, b_hh, batch_sizes):  # noqa: ANN001, ANN205  (autograd's signature)
        hidden = w_hh.shape[1]
        steps = batch_sizes.tolist()
        input_gates = torch.addmm(b_ih, x, w_ih.t())  # [N, 3H], every step's input projection at once
        gates = torch.empty_like(input_gates)  # [N, 3H]: r, z, n of every step, for the backward pass
        hidden_n = x.new_empty(x.shape[0], hidden)  # [N, H]: W_hn h + b_hn
        h_prev = x.new_empty(x.shape[0], hidden)  # [N, H]: the state each step started from
        y = x.new_empty(x.shape[0], hidden)  # [N, H]
        hidden_gates = x.new_empty(steps[0], 3 * hidden)  # [b_t, 3H], reused by every step
        state, row = h0, 0
        for alive in steps:
            rows = slice(row, row + alive)
            h = state[:alive]
            h_prev[rows] = h
            gh = hidden_gates[:alive]
            torch.addmm(b_hh, h, w_hh.t(), out=gh)
            gi, g = input_gates[rows], gates[rows]
            rz = g[:, : 2 * hidden]
            torch.add(gh[:, : 2 * hidden], gi[:, : 2 * hidden], out=rz).sigmoid_()
            hidden_n[rows] = gh[:, 2 * hidden :]
            n = g[:, 2 * hidden :]
            torch.mul(gh[:, 2 * hidden :], g[:, :hidden], out=n)
            n.add_(gi[:, 2 * hidden :]).tanh_()
            out = y[rows]
            torch.sub(h, n, out=out).mul_(g[:, hidden : 2 * hidden]).add_(n)
            state, row = out, row + alive
        ctx.save_for_backward(x, w_ih, w_hh, y)
        ctx.gates, ctx.hidden_n, ctx.h_prev, ctx.steps, ctx.num_pieces = gates, hidden_n, h_prev, steps, h0.shape[0]
        return y

    @staticmethod
    def backward(ctx, grad_y):  # noqa: ANN001, ANN205
        x, w_ih, w_hh, _ = ctx.saved_tensors
        gates, hidden_n, h_prev, steps = ctx.gates, ctx.hidden_n, ctx.h_prev, ctx.steps
        hidden = w_hh.shape[1]
        grad_input_gates = torch.empty_like(gates)  # [N, 3H]: d(pre-activations) of r, z, n
        grad_hidden_gates = torch.empty_like(gates)  # [N, 3H]: d(W_h* h + b_h*)
        grad_h = x.new_zeros(ctx.num_pieces, hidden)  # [P, H]: d(state) of every piece, walked back in time
        direct = x.new_empty(steps[0], hidden)  # [b_t, H]: dh' * z, the gradient reaching h through z * h
        scratch = x.new_empty(steps[0], hidden)
        row = x.shape[0]
        for alive in reversed(steps):
            row -= alive
            rows = slice(row, row + alive)
            dh = grad_h[:alive]
            dh.add_(grad_y[rows])  # dL/dh' of this step
            g, h, ghn = gates[rows], h_prev[rows], hidden_n[rows]
            r, z, n = g[:, :hidden], g[:, hidden : 2 * hidden], g[:, 2 * hidden :]
            di = grad_input_gates[rows]
            dr, dz, dn = di[:, :hidden], di[:, hidden : 2 * hidden], di[:, 2 * hidden :]
            zh, tmp = direct[:alive], scratch[:alive]
            torch.mul(dh, z, out=zh)
            torch.sub(dh, zh, out=dn)  # dh' * (1 - z)
            torch.mul(n, n, out=tmp)
            dn.mul_(tmp.neg_().add_(1))  # * tanh' = 1 - n^2
            torch.sub(h, n, out=dz).mul_(dh)
            torch.mul(z, z, out=tmp)
            dz.mul_(torch.sub(z, tmp, out=tmp))  # * sigmoid' = z (1 - z)
            torch.mul(dn, ghn, out=dr)
            torch.mul(r, r, out=tmp)
            dr.mul_(torch.sub(r, tmp, out=tmp))  # * r (1 - r)
            dgh = grad_hidden_gates[rows]
            dgh[:, : 2 * hidden] = di[:, : 2 * hidden]
            torch.mul(dn, r, out=dgh[:, 2 * hidden :])
            torch.addmm(zh, dgh, w_hh, out=dh)  # dL/dh of the state this step started from
        needs = ctx.needs_input_grad
        grad_x = grad_input_gates.mm(w_ih) if needs[0] else None
        grad_h0 = grad_h if needs[1] else None
        grad_w_ih = grad_input_gates.t().mm(x) if needs[2] else None
        grad_w_hh = grad_hidden_gates.t().mm(h_prev) if needs[3] else None
        grad_b_ih = grad_input_gates.sum(0) if needs[4] else None
        grad_b_hh = grad_hidden_gates.sum(0) if needs[5] else None
        return grad_x, grad_h0, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh, None


def packed_gru_applies(rnn: nn.Module, packed: PackedSequence, h0: Tensor) -> bool:
    """Whether :func:`packed_gru` computes what ``rnn(packed, h0)`` does: a single-layer, unidirectional
    ``nn.GRU`` with biases and without projections, float32 on the CPU (elsewhere torch's fused kernels are the
    fast ones)."""
    data = packed.data
    return (
        type(rnn) is nn.GRU
        and rnn.num_layers == 1
        and not rnn.bidirectional
        and not rnn.batch_first
        and rnn.bias
        and data.device.type == "cpu"
        and data.dtype == torch.float32
        and data.dim() == 2
        and h0.dim() == 2
        and rnn.weight_hh_l0.dtype == torch.float32
    )


def packed_gru(rnn: nn.GRU, packed: PackedSequence, h0: Tensor) -> tuple[PackedSequence, Tensor]:
    """``rnn(packed, h0[None])`` with the backward pass above: ``(output, h_n)`` as ``nn.GRU`` returns them, with
    ``h0`` and ``h_n`` ``[P, H]`` in the pieces' original order (see ``packed_gru_applies`` for when it may run)."""
    batch_sizes, sorted_indices, unsorted_indices = packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
    h0_sorted = h0 if sorted_indices is None else h0.index_select(0, sorted_indices)
    y = _PackedGRUFunction.apply(
        packed.data, h0_sorted, rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0, batch_sizes
    )
    # a piece's final state is its output at its last step: row offset of that step + the piece's rank
    num_pieces = h0.shape[0]
    ranks = torch.arange(num_pieces)
    lengths = (batch_sizes.unsqueeze(0) > ranks.unsqueeze(1)).sum(dim=1)  # [P], sorted order
    step_offsets = torch.cumsum(batch_sizes, dim=0) - batch_sizes  # [T]
    last_rows = (step_offsets[lengths - 1] + ranks).to(y.device)  # [P], sorted order
    if unsorted_indices is not None:
        last_rows = last_rows[unsorted_indices]
    output = PackedSequence(y, batch_sizes, sorted_indices, unsorted_indices)
    return output, y.index_select(0, last_rows)
