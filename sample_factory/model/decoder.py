"""Decoders: an optional MLP between the core and the policy/value heads."""

from __future__ import annotations

from torch import Tensor

from sample_factory.model.model_utils import ModelModule, create_mlp, keep_torch_init, mlp_out_size, nonlinearity
from sample_factory.utils.typing import Config


class Decoder(ModelModule):
    """Base class of decoders: ``forward(core_output) -> [B, get_out_size()]``."""


class MlpDecoder(Decoder):
    """MLP of ``--decoder_mlp_layers``; with the default empty list it is the identity."""

    def __init__(self, cfg: Config, decoder_input_size: int) -> None:
        super().__init__(cfg)
        self.mlp = keep_torch_init(create_mlp(cfg.decoder_mlp_layers, decoder_input_size, nonlinearity(cfg)))
        self.decoder_out_size = mlp_out_size(cfg.decoder_mlp_layers, decoder_input_size)

    def forward(self, core_output: Tensor) -> Tensor:
        return self.mlp(core_output)  # [B, decoder_out_size]

    def get_out_size(self) -> int:
        return self.decoder_out_size


def default_make_decoder_func(cfg: Config, core_input_size: int) -> Decoder:
    """The library's decoder: ``MlpDecoder`` over the core's output of width ``core_input_size``."""
    return MlpDecoder(cfg, core_input_size)
