"""``ChaoticDwarvenGPT5``: a NetHack encoder in the style of the NeurIPS 2021 NetHack Challenge's best neural agent.

It reads what a human player sees: the message line (:class:`TopLineEncoder`), the status lines
(:class:`BottomLinesEncoder`), a picture of the map around the agent (``screen_image``, which the env draws with
``--add_image_observation``; :class:`ScreenEncoder`), the numeric statistics (:class:`BLStatsEncoder`) and, with
``--use_prev_action``, the previous action. The parts are concatenated and mixed by one ELU layer of ``--h_dim``
units, the input of the recurrent core.

:class:`MessageEncoder` (NLE's 256-byte ``message`` key) and :class:`InverseModel` (an auxiliary head that predicts
the action between two consecutive encodings) are building blocks for variants; ``--use_inverse_model`` attaches an
``InverseModel`` as ``encoder.inverse_model``, whose loss the training loop does not add by itself.
"""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import Tensor, nn

from sample_factory.model.encoder import Encoder, as_dict_space
from sample_factory.utils.typing import Config, ObsSpace
from sf_examples.nethack.models.scaled import TTY_COLS, conv_outdim, num_prev_actions, prev_action_one_hot
from sf_examples.nethack.utils.blstats import NUM_BLSTATS

__all__ = [
    "BLStatsEncoder",
    "BottomLinesEncoder",
    "ChaoticDwarvenGPT5",
    "InverseModel",
    "MessageEncoder",
    "ScreenEncoder",
    "TopLineEncoder",
    "conv_outdim",
]

FIRST_PRINTABLE, NUM_PRINTABLE = 32, 96  # ASCII 32..127; other codes count as a space


def _printable_one_hot(text: Tensor) -> Tensor:
    """Character codes ``[B, L]`` -> one-hot over the 96 printable ASCII characters, ``[B, L, 96]``."""
    codes = text.long() - FIRST_PRINTABLE
    codes = torch.where((codes >= 0) & (codes < NUM_PRINTABLE), codes, torch.zeros_like(codes))
    return nn.functional.one_hot(codes, NUM_PRINTABLE).float()


class TopLineEncoder(nn.Module):
    """The message line: each of its 80 characters one-hot over printable ASCII, then two ELU layers of 128."""

    def __init__(self) -> None:
        super().__init__()
        self.out_size = 128
        hidden = self.out_size
        self.mlp = nn.Sequential(
            nn.Linear(TTY_COLS * NUM_PRINTABLE, hidden), nn.ELU(), nn.Linear(hidden, hidden), nn.ELU()
        )

    def forward(self, top_line: Tensor) -> Tensor:
        """``[B, 80]`` character codes -> ``[B, 128]``."""
        return self.mlp(_printable_one_hot(top_line).flatten(1))


class BottomLinesEncoder(nn.Module):
    """The two status lines as one 160-character strip, one-hot over printable ASCII, read by two 1-D
    convolutions (so "Dlvl:3" is recognised wherever it sits), then an ELU layer of 128."""

    def __init__(self) -> None:
        super().__init__()
        self.out_size = 128
        self.conv = nn.Sequential(
            nn.Conv1d(NUM_PRINTABLE, 32, kernel_size=8, stride=4, padding=2),
            nn.ELU(),
            nn.Conv1d(32, 64, kernel_size=4, stride=2, padding=1),
            nn.ELU(),
        )
        length = conv_outdim(conv_outdim(2 * TTY_COLS, 8, padding=2, stride=4), 4, padding=1, stride=2)
        self.fc = nn.Sequential(nn.Linear(64 * length, self.out_size), nn.ELU())

    def forward(self, bottom_lines: Tensor) -> Tensor:
        """``[B, 2, 80]`` character codes -> ``[B, 128]``."""
        one_hot = _printable_one_hot(bottom_lines.flatten(1))  # [B, 160, 96]
        return self.fc(self.conv(one_hot.transpose(1, 2)).flatten(1))


class ScreenEncoder(nn.Module):
    """The picture of the map around the agent (``screen_image``, ``[3, H, W]`` pixels): three ELU convolutions
    (32, 64 and 128 channels; 8x8 stride 4, 4x4 stride 2, 3x3 stride 1), then an ELU layer of 512.
    ``screen_shape`` is the image's (height, width)."""

    def __init__(self, screen_shape: tuple[int, int]) -> None:
        super().__init__()
        height, width = screen_shape[-2:]
        layers = [(3, 32, 8, 4), (32, 64, 4, 2), (64, 128, 3, 1)]
        modules: list[nn.Module] = []
        for in_channels, out_channels, kernel, stride in layers:
            modules += [nn.Conv2d(in_channels, out_channels, kernel, stride), nn.ELU()]
            height, width = conv_outdim(height, kernel, stride=stride), conv_outdim(width, kernel, stride=stride)
        if height < 1 or width < 1:
            shape = tuple(screen_shape)
            raise ValueError(f"screen_image of {shape} pixels is too small: raise --crop_dim or --pixel_size")
        self.conv = nn.Sequential(*modules)
        self.out_size = 512
        self.fc = nn.Sequential(nn.Linear(128 * height * width, self.out_size), nn.ELU())

    def forward(self, screen_image: Tensor) -> Tensor:
        """``[B, 3, H, W]`` pixels (already scaled, see ``--obs_scale``) -> ``[B, 512]``."""
        return self.fc(self.conv(screen_image).flatten(1))


class MessageEncoder(nn.Module):
    """NLE's ``message`` key (256 bytes, NUL-padded): each printable character one-hot through an ELU layer of
    128, summed over the message (so its length does not matter), then one more ELU layer of 128."""

    def __init__(self) -> None:
        super().__init__()
        self.out_size = 128
        self.per_char = nn.Sequential(nn.Linear(NUM_PRINTABLE, self.out_size), nn.ELU())
        self.fc = nn.Sequential(nn.Linear(self.out_size, self.out_size), nn.ELU())

    def forward(self, message: Tensor) -> Tensor:
        """``[B, 256]`` byte codes -> ``[B, 128]``; NUL bytes contribute nothing."""
        present = (message > 0).unsqueeze(-1).float()
        return self.fc((self.per_char(_printable_one_hot(message)) * present).sum(dim=1))


class BLStatsEncoder(nn.Module):
    """The 27 bottom-line statistics, each squashed by ``sign(x) * log(1 + |x|)`` (scores and turn counts grow
    without bound), then two ELU layers of 128."""

    def __init__(self) -> None:
        super().__init__()
        self.out_size = 128
        self.mlp = nn.Sequential(
            nn.Linear(NUM_BLSTATS, self.out_size), nn.ELU(), nn.Linear(self.out_size, self.out_size), nn.ELU()
        )

    def forward(self, blstats: Tensor) -> Tensor:
        """``[B, 27]`` -> ``[B, 128]``."""
        x = blstats.float()
        return self.mlp(torch.sign(x) * torch.log1p(x.abs()))


class InverseModel(nn.Module):
    """Predict the action taken between two consecutive encodings: logits over ``action_space``'s actions from
    the concatenated ``[B, h_dim]`` pair (a self-supervised signal that makes encodings notice what actions do)."""

    def __init__(self, h_dim: int, action_space: gym.spaces.Discrete | int) -> None:
        super().__init__()
        num_actions = int(action_space) if isinstance(action_space, int) else int(action_space.n)
        self.num_actions = num_actions
        self.mlp = nn.Sequential(nn.Linear(2 * h_dim, h_dim), nn.ELU(), nn.Linear(h_dim, num_actions))

    def forward(self, obs: Tensor, next_obs: Tensor) -> Tensor:
        """Encodings at t and t+1, ``[B, h_dim]`` each -> action logits ``[B, num_actions]``."""
        return self.mlp(torch.cat([obs, next_obs], dim=-1))


class ChaoticDwarvenGPT5(Encoder):
    """The encoder described at the top of this module (``--model=ChaoticDwarvenGPT5``)."""

    def __init__(self, cfg: Config, obs_space: ObsSpace) -> None:
        super().__init__(cfg)
        spaces = as_dict_space(obs_space).spaces
        if "screen_image" not in spaces:
            raise ValueError(
                "ChaoticDwarvenGPT5 reads the screen_image observation: train with --add_image_observation=True "
                "(or pick --model=ScaledNet, which reads the terminal's characters)"
            )
        self.topline_encoder = TopLineEncoder()
        self.bottomline_encoder = BottomLinesEncoder()
        self.screen_encoder = ScreenEncoder(spaces["screen_image"].shape[-2:])
        self.blstats_encoder = BLStatsEncoder()
        self.num_actions = num_prev_actions(obs_space) if cfg.use_prev_action else 0
        parts = (self.topline_encoder, self.bottomline_encoder, self.screen_encoder, self.blstats_encoder)
        in_size = sum(part.out_size for part in parts) + self.num_actions
        self.fc = nn.Sequential(nn.Linear(in_size, cfg.h_dim), nn.ELU())
        self.out_size = cfg.h_dim
        if getattr(cfg, "use_inverse_model", False) and self.num_actions:
            self.inverse_model = InverseModel(cfg.h_dim, self.num_actions)

    def forward(self, obs_dict: dict[str, Tensor]) -> Tensor:
        chars = obs_dict["tty_chars"]
        parts = [
            self.topline_encoder(chars[:, 0]),
            self.bottomline_encoder(chars[:, -2:]),
            self.screen_encoder(obs_dict["screen_image"]),
            self.blstats_encoder(obs_dict["blstats"]),
        ]
        if self.num_actions:
            parts.append(prev_action_one_hot(obs_dict, self.num_actions))
        return self.fc(torch.cat(parts, dim=1))

    def get_out_size(self) -> int:
        return self.out_size
