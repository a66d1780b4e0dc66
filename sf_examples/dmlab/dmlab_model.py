"""The DeepMind Lab encoder: the library's conv net for the frame, plus a bag of word embeddings for the
instruction of language levels (observations with an ``instr`` key)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sample_factory.model.encoder import Encoder, as_dict_space, make_img_encoder
from sample_factory.utils.typing import Config, ObsSpace
from sf_examples.dmlab.dmlab_env import INSTRUCTION_VOCABULARY

INSTRUCTION_EMBEDDING = 32


class DmlabEncoder(Encoder):
    """Frame features (``--encoder_conv_architecture``), concatenated with the mean embedding of the instruction's
    words when the env gives one (padding tokens, id 0, are left out of the mean)."""

    def __init__(self, cfg: Config, obs_space: ObsSpace) -> None:
        super().__init__(cfg)
        spaces = as_dict_space(obs_space).spaces
        self.frame_encoder = make_img_encoder(cfg, spaces["obs"])
        self.out_size = self.frame_encoder.get_out_size()
        self.word_embedding: nn.Embedding | None = None
        if "instr" in spaces:
            self.word_embedding = nn.Embedding(INSTRUCTION_VOCABULARY, INSTRUCTION_EMBEDDING, padding_idx=0)
            self.out_size += INSTRUCTION_EMBEDDING

    def forward(self, obs_dict: dict[str, Tensor]) -> Tensor:
        features = self.frame_encoder(obs_dict["obs"])  # [B, conv_out]
        if self.word_embedding is None:
            return features
        tokens = obs_dict["instr"].long()  # [B, words]
        embedded = self.word_embedding(tokens)  # [B, words, E]
        present = (tokens > 0).unsqueeze(-1).float()  # [B, words, 1]
        words = embedded.mul(present).sum(dim=1) / present.sum(dim=1).clamp(min=1.0)  # [B, E]
        return torch.cat([features, words], dim=1)

    def get_out_size(self) -> int:
        return self.out_size


def make_dmlab_encoder(cfg: Config, obs_space: ObsSpace) -> Encoder:
    """Encoder factory for ``global_model_factory().register_encoder_factory``."""
    return DmlabEncoder(cfg, obs_space)
