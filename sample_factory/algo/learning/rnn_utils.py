"""Sample Factory 2's names for packing a minibatch into episode pieces for BPTT, and unpacking the core's output.

Scripts written against Sample Factory 2 call ``build_rnn_inputs`` before their recurrent core and
``build_core_out_from_seq`` after it. Both are thin names over ``bptt.pack_episode_pieces`` and
``bptt.unpack_episode_pieces``, the functions the learner itself uses, so the two paths cannot drift apart.
"""

from __future__ import annotations

from torch import Tensor
from torch.nn.utils.rnn import PackedSequence

from sample_factory.algo.learning.bptt import pack_episode_pieces, unpack_episode_pieces


def build_rnn_inputs(x: Tensor, dones_cpu: Tensor, rnn_states: Tensor, T: int) -> tuple[PackedSequence, Tensor, Tensor]:
    """Cut a flat minibatch of ``T``-step segments into episode pieces packed for a recurrent core.

    Args:
        x: [B*T, D] core inputs; the T rows of one segment (one trajectory's consecutive steps) are contiguous.
        dones_cpu: [B*T] episode-end flags; a done on step t makes step t+1 start a new piece from a zero state.
        rnn_states: [B*T, H] states stored before each step; only those at segment starts are read.
        T: segment length (``--recurrence``).

    Returns:
        ``(x_seq, rnn_states, inverted_select_inds)``: the pieces as a ``PackedSequence``; the initial state of
        each piece [P, H] (zero where the piece follows a done), in the order ``torch.nn.GRU``/``LSTM`` take it
        with ``x_seq`` (add the layer dimension with ``unsqueeze(0)``); and the row of each input sample in
        ``x_seq.data`` [B*T], for ``build_core_out_from_seq``.
    """
    return pack_episode_pieces(x, rnn_states, dones_cpu, T)


def build_core_out_from_seq(x_seq: PackedSequence, inverted_select_inds: Tensor) -> Tensor:
    """The core's packed output ``x_seq`` back in the original row order of ``build_rnn_inputs``: [B*T, H]."""
    return unpack_episode_pieces(x_seq, inverted_select_inds)
