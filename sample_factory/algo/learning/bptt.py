"""Backpropagation through time over ``recurrence``-long segments, cut exactly at episode boundaries.

A minibatch holds whole segments of ``recurrence`` consecutive steps of one trajectory (sample ``i`` of segment
``s`` sits at ``s * recurrence + i``). Inside a segment an episode may end; the recurrent core must then start the
next episode from a zero state, just as the rollout worker did when it collected the data. Rather than stepping
through time in Python, each segment is split at its dones into *episode pieces* and all pieces are run at once as
one ``PackedSequence``; the initial state of a piece is the stored state at the segment start, or zero after a
done. The packing is computed with tensor ops only, so its cost does not grow with the number of pieces.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn.utils.rnn import PackedSequence

from sample_factory.model.actor_critic import ActorCritic


@dataclass
class EpisodePieces:
    """Where every sample of a minibatch goes in the packed (time-major, longest-piece-first) layout."""

    batch_sizes: Tensor  # [max_len] int64 on the CPU: number of pieces longer than k, as PackedSequence wants
    sorted_indices: Tensor  # [num_pieces] piece ids ordered by decreasing length
    unsorted_indices: Tensor  # [num_pieces] rank of each piece in that order (inverse permutation)
    packed_positions: Tensor  # [B] row of each sample in the packed data
    packed_order: Tensor  # [B] sample stored at each row of the packed data (inverse of packed_positions)
    piece_starts: Tensor  # [num_pieces] index of the first sample of each piece
    starts_after_done: Tensor  # [num_pieces] bool, the piece begins a new episode inside a segment

    def to(self, device: torch.device) -> EpisodePieces:
        """Index tensors on ``device``; ``batch_sizes`` stays on the CPU as ``PackedSequence`` requires."""
        return EpisodePieces(
            self.batch_sizes,
            *(
                t.to(device)
                for t in (
                    self.sorted_indices,
                    self.unsorted_indices,
                    self.packed_positions,
                    self.packed_order,
                    self.piece_starts,
                    self.starts_after_done,
                )
            ),
        )


def split_into_episode_pieces(dones: Tensor, recurrence: int) -> EpisodePieces:
    """Split segments at their dones and compute the packed layout of the pieces.

    Args:
        dones: [B] flags of the minibatch's samples, ``B = num_segments * recurrence``, segment-major. A done on
            step t means step t+1 starts a new episode; a done on a segment's last step needs no cut.
        recurrence: segment length.
    """
    dones = dones.detach().to("cpu", torch.bool).view(-1, recurrence)  # [S, R]
    starts_after_done = torch.zeros_like(dones)  # [S, R]
    starts_after_done[:, 1:] = dones[:, :-1]
    is_start = starts_after_done.clone()
    is_start[:, 0] = True
    is_start, starts_after_done = is_start.flatten(), starts_after_done.flatten()  # [B]

    num_samples = is_start.shape[0]
    piece_of_sample = torch.cumsum(is_start, dim=0) - 1  # [B]
    piece_starts = torch.nonzero(is_start).squeeze(1)  # [P]
    lengths = torch.diff(piece_starts, append=torch.tensor([num_samples]))  # [P]
    step_in_piece = torch.arange(num_samples) - piece_starts[piece_of_sample]  # [B]

    sorted_indices = torch.argsort(lengths, descending=True, stable=True)  # [P]
    unsorted_indices = torch.empty_like(sorted_indices)
    unsorted_indices[sorted_indices] = torch.arange(sorted_indices.shape[0])

    max_len = int(lengths.max())
    batch_sizes = (lengths.unsqueeze(0) > torch.arange(max_len).unsqueeze(1)).sum(dim=1)  # [max_len]
    row_offsets = torch.cumsum(batch_sizes, dim=0) - batch_sizes  # [max_len], first packed row of each time step
    # pieces alive at step k are exactly the batch_sizes[k] longest ones, so a piece's rank is its column
    packed_positions = row_offsets[step_in_piece] + unsorted_indices[piece_of_sample]  # [B]
    packed_order = torch.empty_like(packed_positions)
    packed_order[packed_positions] = torch.arange(num_samples)

    return EpisodePieces(
        batch_sizes=batch_sizes,
        sorted_indices=sorted_indices,
        unsorted_indices=unsorted_indices,
        packed_positions=packed_positions,
        packed_order=packed_order,
        piece_starts=piece_starts,
        starts_after_done=starts_after_done[piece_starts],
    )


def pack_episode_pieces(
    features: Tensor, rnn_states: Tensor, dones: Tensor, recurrence: int
) -> tuple[PackedSequence, Tensor, Tensor]:
    """The minibatch as a ``PackedSequence`` of episode pieces, ready for a recurrent core.

    Args:
        features: [B, F] core inputs in sample order.
        rnn_states: [B, rnn_size] states stored before each step; only those at piece starts are read.
        dones: [B] episode-end flags (see ``split_into_episode_pieces``).

    Returns:
        ``(packed, initial_states, packed_positions)``: the pieces' inputs (with ``sorted_indices`` set, so
        ``initial_states`` [P, rnn_size] is in piece order as ``torch.nn.GRU``/``LSTM`` expect it: the stored state
        at a segment start, zero after a done) and the row of each sample in ``packed.data`` [B], which
        ``unpack_episode_pieces`` uses to bring the core's output back to sample order.
    """
    if features.shape[0] % recurrence or dones.shape[0] != features.shape[0]:
        raise ValueError(
            f"the minibatch has {features.shape[0]} samples and {dones.shape[0]} dones: both must be the same "
            f"multiple of the recurrence ({recurrence}), whole segments of consecutive steps"
        )
    pieces = split_into_episode_pieces(dones, recurrence).to(features.device)
    packed = PackedSequence(
        features[pieces.packed_order], pieces.batch_sizes, pieces.sorted_indices, pieces.unsorted_indices
    )
    keep_state = (~pieces.starts_after_done).unsqueeze(1).to(rnn_states.dtype)  # [P, 1]
    initial_states = rnn_states[pieces.piece_starts] * keep_state  # [P, rnn_size], original piece order
    return packed, initial_states, pieces.packed_positions


def unpack_episode_pieces(packed_output: PackedSequence, packed_positions: Tensor) -> Tensor:
    """The core's packed output back in sample order: ``[B, core_out]``."""
    return packed_output.data[packed_positions]


def core_forward_bptt(
    actor_critic: ActorCritic, head_output: Tensor, rnn_states: Tensor, dones: Tensor, recurrence: int
) -> Tensor:
    """Core outputs ``[B, core_out]`` of every sample, computed with exact episode resets.

    Args:
        head_output: [B, F] encoder features in sample order.
        rnn_states: [B, rnn_size] states stored before each step; only those at segment starts are read.
        dones: [B] episode-end flags (see ``split_into_episode_pieces``).
    """
    if recurrence == 1 or not actor_critic.cfg.use_rnn:
        core_output, _ = actor_critic.forward_core(head_output, rnn_states)  # each step starts from its stored state
        return core_output
    packed, initial_states, packed_positions = pack_episode_pieces(head_output, rnn_states, dones, recurrence)
    packed_output, _ = actor_critic.forward_core(packed, initial_states)
    return unpack_episode_pieces(packed_output, packed_positions)
