"""The VizDoom encoder: the library's conv net for the screen plus a small MLP for the ``measurements`` vector."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sample_factory.model.encoder import Encoder, as_dict_space, make_img_encoder, rename_legacy_keys
from sample_factory.model.model_utils import nonlinearity
from sample_factory.utils.typing import Config, ObsSpace

MEASUREMENTS_HIDDEN = 128


class VizdoomEncoder(Encoder):
    """Screen features (``--encoder_conv_architecture``) concatenated with encoded measurements when present.

    The default multi-input encoder would give the 24 measurements the same 512x512 MLP as any vector input;
    a 128-unit MLP is plenty for them and keeps the screen features dominant. The submodules are named as in
    Sample Factory 2 (``basic_encoder``, ``measurements_head``), so checkpoints load in either library.
    """

    def __init__(self, cfg: Config, obs_space: ObsSpace) -> None:
        super().__init__(cfg)
        spaces = as_dict_space(obs_space).spaces
        self.basic_encoder = make_img_encoder(cfg, spaces["obs"])
        self.out_size = self.basic_encoder.get_out_size()
        self.measurements_head: nn.Module | None = None
        if "measurements" in spaces:
            num_measurements = spaces["measurements"].shape[0]
            self.measurements_head = nn.Sequential(
                nn.Linear(num_measurements, MEASUREMENTS_HIDDEN),
                nonlinearity(cfg),
                nn.Linear(MEASUREMENTS_HIDDEN, MEASUREMENTS_HIDDEN),
                nonlinearity(cfg),
            )
            self.out_size += MEASUREMENTS_HIDDEN

    def forward(self, obs_dict: dict[str, Tensor]) -> Tensor:
        features = self.basic_encoder(obs_dict["obs"])  # [B, conv_out]
        if self.measurements_head is None:
            return features
        # the env scales measurements to about [0, 1]; --obs_scale applies to the screen only
        measurements = self.measurements_head(obs_dict["measurements"])  # [B, MEASUREMENTS_HIDDEN]
        return torch.cat([features, measurements], dim=1)

    def get_out_size(self) -> int:
        return self.out_size

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args, **kwargs) -> None:
        # checkpoints written before the submodules took Sample Factory 2's names
        rename_legacy_keys(
            state_dict, prefix, {"screen_encoder.": "basic_encoder.", "measurements_mlp.": "measurements_head."}
        )
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def make_vizdoom_encoder(cfg: Config, obs_space: ObsSpace) -> Encoder:
    """Encoder factory for ``global_model_factory().register_encoder_factory``."""
    return VizdoomEncoder(cfg, obs_space)
