"""VizDoom training with a user's own conv encoder, registered by the user's script as Sample Factory 2's custom-model
documentation shows (the conv output flattened with ``x.view``).

    python tests/vizdoom/doom_user_encoder_train.py --env=doom_basic --experiment=... [flags]

Used by ``test_train_vizdoom.py``: the learner cannot train this encoder channels-last, and must say so and train it.
"""

from __future__ import annotations

import sys

import torch
from torch import nn

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.model.encoder import Encoder
from sample_factory.train import run_rl
from sample_factory.utils.torch_utils import calc_num_elements
from sf_examples.vizdoom.train_vizdoom import choose_base_port, parse_vizdoom_cfg, register_vizdoom_envs


class DoomViewEncoder(Encoder):
    """Screen through three convolutions, flattened with ``.view``; measurements through a small MLP."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        screen = obs_space["obs"].shape
        self.conv_head = nn.Sequential(
            nn.Conv2d(screen[0], 32, 8, stride=4), nn.ELU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ELU(),
            nn.Conv2d(64, 128, 3, stride=2), nn.ELU(),
        )  # fmt: skip
        self.conv_head_out_size = calc_num_elements(self.conv_head, screen)
        self.measurements = nn.Linear(obs_space["measurements"].shape[0], 32) if "measurements" in obs_space else None
        self.out_size = 256
        extra = 32 if self.measurements is not None else 0
        self.mlp = nn.Sequential(nn.Linear(self.conv_head_out_size + extra, self.out_size), nn.ELU())

    def forward(self, obs_dict):
        x = self.conv_head(obs_dict["obs"])
        x = x.view(-1, self.conv_head_out_size)
        if self.measurements is not None:
            x = torch.cat([x, torch.tanh(self.measurements(obs_dict["measurements"]))], dim=1)
        return self.mlp(x)

    def get_out_size(self) -> int:
        return self.out_size


def main() -> int:
    register_vizdoom_envs()
    global_model_factory().register_encoder_factory(DoomViewEncoder)
    cfg = parse_vizdoom_cfg()
    choose_base_port(cfg)
    return run_rl(cfg)


if __name__ == "__main__":
    sys.exit(main())
