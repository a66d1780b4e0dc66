"""``ScaledNet``: a NetHack encoder over the terminal's characters and colours, sized by flags.

Four inputs, concatenated and mixed by one layer of ``--h_dim`` units:

- the top line (NetHack's messages) by :class:`TopLineEncoder`;
- the two bottom lines (the character's statistics as text) by :class:`BottomLinesEncoder`;
- the map (terminal rows 1-21) by :class:`CharColorEncoderResnet`: a character embedding and a colour embedding
  per cell, stacked as channels, then stages of convolution, max-pooling and residual blocks;
- with ``--use_crop``, a ``--crop_dim`` square of the terminal around the cursor (the agent) by a second
  :class:`CharColorEncoderResnet`, whose output is layer-normalised with ``--use_crop_norm``;
- with ``--use_prev_action``, the previous action as a one-hot vector.

Every input arrives as float (the model casts observations); the encoders turn codes back into indices.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from sample_factory.model.encoder import Encoder, as_dict_space
from sample_factory.utils.typing import Config, ObsSpace
from sf_examples.nethack.models.crop import Crop
from sf_examples.nethack.models.utils import interleave

TTY_ROWS, TTY_COLS = 24, 80
MAP_ROWS = slice(1, 22)  # the map part of the terminal: below the message line, above the two status lines
NUM_CHARS = 256
NUM_COLORS = 32  # tty_colors: 16 colours, bit 4 marks the inverse-video ones


def conv_outdim(i_dim: int, k: int, padding: int = 0, stride: int = 1, dilation: int = 1) -> int:
    """Output length of a convolution (or pooling) along one dimension of length ``i_dim``."""
    return math.floor((i_dim + 2 * padding - dilation * (k - 1) - 1) / stride + 1)


def selectt(embedding_layer: nn.Embedding, x: Tensor, use_index_select: bool) -> Tensor:
    """Embed the integer codes ``x`` (any shape): ``[..., dim]``. ``use_index_select`` gathers rows of the weight
    with ``index_select`` on the flattened codes, which some backends run faster than ``nn.Embedding``'s lookup;
    both give the same values."""
    if use_index_select:
        flat = embedding_layer.weight.index_select(0, x.reshape(-1))
        return flat.view(*x.shape, -1)
    return embedding_layer(x)


def _codes(x: Tensor, limit: int) -> Tensor:
    """Float observations back to embedding indices in ``[0, limit)``."""
    return x.long().clamp_(0, limit - 1)


class ResBlock(nn.Module):
    """``num_layers`` of (ELU, convolution with a ``filter_size`` square kernel, size-preserving), added to the
    input (through a 1x1 convolution when the channel counts differ)."""

    def __init__(self, in_channels: int, out_channels: int, filter_size: int, num_layers: int) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"ResBlock needs at least one layer, got num_layers={num_layers}")
        channels = [in_channels] + [out_channels] * num_layers
        convs = [
            nn.Conv2d(channels[i], channels[i + 1], filter_size, padding=filter_size // 2) for i in range(num_layers)
        ]
        self.body = nn.Sequential(*interleave([nn.ELU() for _ in convs], convs))
        self.skip = nn.Identity() if in_channels == out_channels else nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x: Tensor) -> Tensor:
        return self.skip(x) + self.body(x)


class TopLineEncoder(nn.Module):
    """The message line (80 characters): a 16-dimensional embedding per character, then two ELU layers of
    ``msg_hdim`` units over the whole line."""

    def __init__(self, msg_hdim: int) -> None:
        super().__init__()
        self.char_embedding = nn.Embedding(NUM_CHARS, 16)
        self.mlp = nn.Sequential(nn.Linear(TTY_COLS * 16, msg_hdim), nn.ELU(), nn.Linear(msg_hdim, msg_hdim), nn.ELU())
        self.out_size = msg_hdim

    def forward(self, top_line: Tensor) -> Tensor:
        """``top_line``: ``[B, 80]`` character codes -> ``[B, msg_hdim]``."""
        return self.mlp(self.char_embedding(_codes(top_line, NUM_CHARS)).flatten(1))


class BottomLinesEncoder(nn.Module):
    """The two status lines (2 x 80 characters) read as one 160-character strip: embedded characters, two 1-D
    convolutions (``scale_cnn_channels`` scales their widths), then an ELU layer of ``h_dim`` units."""

    def __init__(self, h_dim: int, scale_cnn_channels: int = 1) -> None:
        super().__init__()
        width = 2 * TTY_COLS
        c1, c2 = 32 * scale_cnn_channels, 64 * scale_cnn_channels
        self.char_embedding = nn.Embedding(NUM_CHARS, 16)
        self.conv = nn.Sequential(
            nn.Conv1d(16, c1, kernel_size=8, stride=4, padding=2), nn.ELU(), nn.Conv1d(c1, c2, 4, 2, 1), nn.ELU()
        )
        length = conv_outdim(conv_outdim(width, 8, padding=2, stride=4), 4, padding=1, stride=2)
        self.fc = nn.Sequential(nn.Linear(c2 * length, h_dim), nn.ELU())
        self.out_size = h_dim

    def forward(self, bottom_lines: Tensor) -> Tensor:
        """``bottom_lines``: ``[B, 2, 80]`` character codes -> ``[B, h_dim]``."""
        embedded = self.char_embedding(_codes(bottom_lines.flatten(1), NUM_CHARS))  # [B, 160, 16]
        return self.fc(self.conv(embedded.transpose(1, 2)).flatten(1))


class CharColorEncoderResnet(nn.Module):
    """A grid of (character, colour) cells, e.g. the map or a crop of it, to ``h_dim`` features.

    Each cell becomes its character embedding (``char_edim``) next to its colour embedding (``color_edim``); with
    ``obs_frame_stack`` > 1 the inputs carry that many grids and their channels are stacked. Then
    ``screen_conv_blocks`` stages, each a ``kernel_size`` convolution (16, 32, 32, ... channels times
    ``scale_cnn_channels``), a 3x3 stride-2 max-pool (not with ``no_max_pool``) and ``num_res_blocks`` residual
    blocks of ``num_res_layers`` convolutions; finally ``num_fc_layers`` ELU layers of ``h_dim`` units.
    """

    def __init__(
        self,
        screen_shape: tuple[int, int],
        h_dim: int,
        scale_cnn_channels: int = 1,
        num_fc_layers: int = 1,
        char_edim: int = 16,
        color_edim: int = 16,
        obs_frame_stack: int = 1,
        num_res_blocks: int = 2,
        num_res_layers: int = 2,
        kernel_size: int = 3,
        no_max_pool: bool = False,
        screen_conv_blocks: int = 3,
    ) -> None:
        super().__init__()
        if num_fc_layers < 1:
            raise ValueError(f"num_fc_layers must be >= 1, got {num_fc_layers}")
        self.screen_shape = tuple(screen_shape)
        self.obs_frame_stack = obs_frame_stack
        self.use_index_select = True  # gathers embedding rows with index_select (see selectt)
        self.char_embedding = nn.Embedding(NUM_CHARS, char_edim)
        self.color_embedding = nn.Embedding(NUM_COLORS, color_edim)
        in_channels = (char_edim + color_edim) * obs_frame_stack
        height, width = self.screen_shape
        layers: list[nn.Module] = []
        for stage in range(screen_conv_blocks):
            out_channels = (16 if stage == 0 else 32) * scale_cnn_channels
            layers.append(nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2))
            if not no_max_pool:
                layers.append(nn.MaxPool2d(3, stride=2, padding=1))
                height, width = conv_outdim(height, 3, 1, 2), conv_outdim(width, 3, 1, 2)
            layers += [ResBlock(out_channels, out_channels, kernel_size, num_res_layers) for _ in range(num_res_blocks)]
            in_channels = out_channels
        layers.append(nn.ELU())
        self.conv = nn.Sequential(*layers)
        conv_out = in_channels * height * width
        sizes = [conv_out] + [h_dim] * num_fc_layers
        linears = [nn.Linear(sizes[i], sizes[i + 1]) for i in range(num_fc_layers)]
        self.fc = nn.Sequential(*interleave(linears, [nn.ELU() for _ in linears]))
        self.out_size = h_dim

    def forward(self, chars: Tensor, colors: Tensor) -> Tensor:
        """``chars``, ``colors``: ``[B, H, W]`` (or ``[B, obs_frame_stack, H, W]``) codes -> ``[B, h_dim]``."""
        if chars.dim() == 3:
            chars, colors = chars.unsqueeze(1), colors.unsqueeze(1)
        char_features = selectt(self.char_embedding, _codes(chars, NUM_CHARS), self.use_index_select)
        color_features = selectt(self.color_embedding, _codes(colors, NUM_COLORS), self.use_index_select)
        embedded = torch.cat([char_features, color_features], dim=-1)  # [B, F, H, W, E]
        batch, frames, height, width, edim = embedded.shape
        x = embedded.permute(0, 1, 4, 2, 3).reshape(batch, frames * edim, height, width)
        return self.fc(self.conv(x).flatten(1))


def num_prev_actions(obs_space: ObsSpace) -> int:
    """How many actions the ``prev_actions`` key can hold (0 when the env does not provide it)."""
    spaces = as_dict_space(obs_space).spaces
    if "prev_actions" not in spaces:
        return 0
    return int(spaces["prev_actions"].high.max()) + 1


def prev_action_one_hot(obs_dict: dict[str, Tensor], num_actions: int) -> Tensor:
    return nn.functional.one_hot(_codes(obs_dict["prev_actions"][:, 0], num_actions), num_actions).float()


class ScaledNet(Encoder):
    """The terminal encoder described at the top of this module, as a Sample Factory encoder (``--model=ScaledNet``)."""

    def __init__(self, cfg: Config, obs_space: ObsSpace) -> None:
        super().__init__(cfg)
        spaces = as_dict_space(obs_space).spaces
        missing = {"tty_chars", "tty_colors", "tty_cursor"} - set(spaces)
        if missing:
            raise ValueError(f"ScaledNet needs the observation keys {sorted(missing)} (the nethack_* envs give them)")
        resnet_kwargs = dict(
            scale_cnn_channels=cfg.scale_cnn_channels,
            num_fc_layers=cfg.num_fc_layers,
            char_edim=cfg.char_edim,
            color_edim=cfg.color_edim,
            obs_frame_stack=cfg.obs_frame_stack,
            num_res_blocks=cfg.num_res_blocks if cfg.use_resnet else 0,
            num_res_layers=cfg.num_res_layers,
            kernel_size=cfg.screen_kernel_size,
            no_max_pool=cfg.no_max_pool,
            screen_conv_blocks=cfg.screen_conv_blocks,
        )
        self.topline_encoder = TopLineEncoder(cfg.msg_hdim)
        self.bottomline_encoder = BottomLinesEncoder(cfg.blstats_hdim, cfg.scale_cnn_channels)
        self.screen_encoder = CharColorEncoderResnet((21, TTY_COLS), cfg.fc_after_cnn_hdim, **resnet_kwargs)
        sizes = [self.topline_encoder.out_size, self.bottomline_encoder.out_size, self.screen_encoder.out_size]
        self.crop: Crop | None = None
        if cfg.use_crop:
            self.crop = Crop(TTY_ROWS, TTY_COLS, cfg.crop_dim, cfg.crop_dim)
            crop_shape = (cfg.crop_dim, cfg.crop_dim)
            self.crop_encoder = CharColorEncoderResnet(crop_shape, cfg.fc_after_cnn_hdim, **resnet_kwargs)
            self.crop_norm = nn.LayerNorm(cfg.fc_after_cnn_hdim) if cfg.use_crop_norm else nn.Identity()
            sizes.append(self.crop_encoder.out_size)
        self.num_actions = num_prev_actions(obs_space) if cfg.use_prev_action else 0
        self.fc = nn.Sequential(nn.Linear(sum(sizes) + self.num_actions, cfg.h_dim), nn.ELU())
        self.out_size = cfg.h_dim

    def forward(self, obs_dict: dict[str, Tensor]) -> Tensor:
        chars, colors = obs_dict["tty_chars"], obs_dict["tty_colors"]  # [B, 24, 80]
        parts = [
            self.topline_encoder(chars[:, 0]),
            self.bottomline_encoder(chars[:, -2:]),
            self.screen_encoder(chars[:, MAP_ROWS], colors[:, MAP_ROWS]),
        ]
        if self.crop is not None:
            cursor = obs_dict["tty_cursor"].flip(-1)  # (row, col) -> (x, y)
            parts.append(self.crop_norm(self.crop_encoder(self.crop(chars, cursor), self.crop(colors, cursor))))
        if self.num_actions:
            parts.append(prev_action_one_hot(obs_dict, self.num_actions))
        return self.fc(torch.cat(parts, dim=1))

    def get_out_size(self) -> int:
        return self.out_size
