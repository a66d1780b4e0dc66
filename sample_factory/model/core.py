"""Cores: the recurrent (or pass-through) middle of the actor-critic.

RNN states live in flat per-agent buffers ``[B, rnn_state_size]`` so the samplers can store and index them like any
other tensor. Layout for ``L = --rnn_num_layers`` and ``H = --rnn_size``:

- GRU:  ``[h_layer0 | h_layer1 | ... ]``                               -> ``[B, L*H]``
- LSTM: ``[h_layer0 | ... | h_layer(L-1) | c_layer0 | ... | c_layer(L-1)]`` -> ``[B, 2*L*H]``
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence

from sample_factory.model.direct_calls import original_class
from sample_factory.model.fast_path_checks import is_library_module
from sample_factory.model.gru_bptt import packed_gru, packed_gru_applies
from sample_factory.model.model_utils import ModelModule, keep_torch_init
from sample_factory.utils.typing import Config

CoreInput = Tensor | PackedSequence
RnnHidden = Tensor | tuple[Tensor, Tensor]


class ModelCore(ModelModule):
    """Base of cores: ``forward(head_output, rnn_states) -> (core_output, new_rnn_states)``."""

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self.core_output_size = -1

    def get_out_size(self) -> int:
        return self.core_output_size


class ModelCoreRNN(ModelCore):
    """GRU or LSTM core (``--rnn_type``, ``--rnn_size``, ``--rnn_num_layers``).

    Acts one step at a time for inference (``head_output`` ``[B, F]``), or over whole sequences for BPTT in the
    learner (``head_output`` a ``PackedSequence``; ``rnn_states`` are then the states at the start of each sequence,
    in the sequences' original order, and the returned states are those after each sequence's last step). For packed
    input the output is a ``PackedSequence`` in the same packed order; the caller maps it back to its samples.
    """

    def __init__(self, cfg: Config, input_size: int) -> None:
        super().__init__(cfg)
        if cfg.rnn_type not in ("gru", "lstm"):
            raise ValueError(f"--rnn_type={cfg.rnn_type!r} is not supported, choose gru or lstm")
        self.is_lstm = cfg.rnn_type == "lstm"
        self.num_layers = cfg.rnn_num_layers
        self.hidden_size = cfg.rnn_size
        rnn_cls = nn.LSTM if self.is_lstm else nn.GRU
        self.core = keep_torch_init(rnn_cls(input_size, self.hidden_size, self.num_layers))  # see keep_torch_init
        self.core_output_size = self.hidden_size
        # packed sequences through gru_bptt.packed_gru where it applies; the learner switches it on (its fast paths)
        self.gru_bptt = False

    def rnn_state_size(self) -> int:
        """Width of the flat state this core reads and writes."""
        return self.num_layers * self.hidden_size * (2 if self.is_lstm else 1)

    def _to_layers(self, flat: Tensor) -> Tensor:
        """``[B, L*H]`` -> ``[L, B, H]`` as nn.GRU/nn.LSTM expect."""
        batch = flat.shape[0]
        return flat.reshape(batch, self.num_layers, self.hidden_size).transpose(0, 1).contiguous()

    @staticmethod
    def _from_layers(layers: Tensor) -> Tensor:
        """``[L, B, H]`` -> ``[B, L*H]``."""
        return layers.transpose(0, 1).reshape(layers.shape[1], -1)

    def unflatten_states(self, rnn_states: Tensor) -> RnnHidden:
        """Flat buffer -> the hidden state object of the torch RNN."""
        if rnn_states.shape[-1] != self.rnn_state_size():
            raise ValueError(
                f"rnn_states have {rnn_states.shape[-1]} columns, the {self.cfg.rnn_type} core expects "
                f"{self.rnn_state_size()} (--rnn_size={self.hidden_size}, --rnn_num_layers={self.num_layers})"
            )
        if self.is_lstm:
            h, c = rnn_states.chunk(2, dim=1)
            return self._to_layers(h), self._to_layers(c)
        return self._to_layers(rnn_states)

    def flatten_states(self, hidden: RnnHidden) -> Tensor:
        """Hidden state object of the torch RNN -> flat buffer."""
        if self.is_lstm:
            h, c = hidden
            return torch.cat([self._from_layers(h), self._from_layers(c)], dim=1)
        return self._from_layers(hidden)

    def _gru_step_applies(self, head_output: CoreInput, rnn_states: Tensor) -> bool:
        """Whether one step of the GRU may run as ``torch.gru_cell`` (see ``forward``).

        ``nn.GRU`` runs a single step through its sequence machinery: 0.50 ms for 4 agents with 512 units against
        0.37 ms for the cell on one CPU core, the same result bit for bit (checked for batches of 1 to 64). Only
        without autograd (inference, bootstrap values), for the plain single-layer GRU this class made, without
        hooks on it or on every module (``register_module_forward_hook``) and without a ``forward`` of the instance's
        own: those run the module. LSTM cells differ from ``nn.LSTM`` in the last bits, so LSTM keeps the module.
        """
        rnn = self.core
        return (
            not torch.is_grad_enabled()
            and isinstance(head_output, Tensor)
            and original_class(rnn) is nn.GRU  # the inference worker's direct-call GRU too
            and rnn.num_layers == 1
            and not rnn.bidirectional
            and not rnn.batch_first
            and is_library_module(rnn)
            and head_output.dim() == 2
            and rnn_states.shape[-1] == self.hidden_size  # other widths get unflatten_states' error
        )

    def _gru_bptt_applies(self, packed: PackedSequence, rnn_states: Tensor) -> bool:
        """Whether packed sequences may run through ``gru_bptt.packed_gru``: switched on, and the plain single-layer
        CPU GRU this class made, without hooks on it or on every module and without a ``forward`` of its own."""
        return (
            self.gru_bptt
            and rnn_states.shape[-1] == self.hidden_size
            and is_library_module(self.core)
            and packed_gru_applies(self.core, packed, rnn_states)
        )

    def forward(self, head_output: CoreInput, rnn_states: Tensor) -> tuple[CoreInput, Tensor]:
        if self._gru_step_applies(head_output, rnn_states):
            rnn = self.core
            new_states = torch.gru_cell(
                head_output, rnn_states, rnn.weight_ih_l0, rnn.weight_hh_l0,
                getattr(rnn, "bias_ih_l0", None), getattr(rnn, "bias_hh_l0", None),
            )  # fmt: skip
            return new_states.clone(), new_states  # the output apart from the states, as nn.GRU returns them
        if isinstance(head_output, PackedSequence) and self._gru_bptt_applies(head_output, rnn_states):
            return packed_gru(self.core, head_output, rnn_states)
        hidden = self.unflatten_states(rnn_states)
        if isinstance(head_output, PackedSequence):
            x, new_hidden = self.core(head_output, hidden)
        else:
            x, new_hidden = self.core(head_output.unsqueeze(0), hidden)  # a sequence of length 1
            x = x.squeeze(0)  # [B, H]
        return x, self.flatten_states(new_hidden)


class ModelCoreIdentity(ModelCore):
    """No memory: returns its input and the states untouched (``--use_rnn=False``)."""

    def __init__(self, cfg: Config, input_size: int) -> None:
        super().__init__(cfg)
        self.core_output_size = input_size

    def forward(self, head_output: CoreInput, rnn_states: Tensor) -> tuple[CoreInput, Tensor]:
        return head_output, rnn_states


def default_make_core_func(cfg: Config, core_input_size: int) -> ModelCore:
    """An RNN core when ``--use_rnn``, otherwise the identity."""
    if cfg.use_rnn:
        return ModelCoreRNN(cfg, core_input_size)
    return ModelCoreIdentity(cfg, core_input_size)
