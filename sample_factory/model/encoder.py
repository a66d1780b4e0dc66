"""Encoders: turn (normalised) observations into one flat feature vector per agent.

``default_make_encoder_func`` always builds a ``MultiInputEncoder``: one sub-encoder per key of the observation dict
(images get a conv net, vectors an MLP), outputs concatenated. A plain Box observation space arrives as the dict
``{"obs": box}``. The ``"action_mask"`` key is input to the action distribution, never to the encoder.

Sub-encoders (``MlpEncoder``, ``ConvEncoder``, ``ResnetEncoder``) take a single tensor; ``MultiInputEncoder`` and user
encoders registered through ``global_model_factory()`` take the whole observation dict.
"""

from __future__ import annotations

import math

import gymnasium as gym
import torch
from torch import Tensor, nn

from sample_factory.model.model_utils import ModelModule, create_mlp, keep_torch_init, mlp_out_size, nonlinearity
from sample_factory.utils.torch_utils import calc_num_elements
from sample_factory.utils.typing import Config, ObsSpace

ACTION_MASK_KEY = "action_mask"

# (out_channels, kernel_size, stride) per conv layer
ConvSpec = list[tuple[int, int, int]]
_CONV_ARCHITECTURES: dict[str, ConvSpec] = {
    # small default, enough for low-resolution inputs such as VizDoom 72x128 or 36x36
    "convnet_simple": [(32, 8, 4), (64, 4, 2), (128, 3, 2)],
    # the Nature DQN network (Mnih et al., 2015), designed for 84x84 Atari frames
    "convnet_atari": [(32, 8, 4), (64, 4, 2), (64, 3, 1)],
    # the shallow IMPALA network (Espeholt et al., 2018)
    "convnet_impala": [(16, 8, 4), (32, 4, 2)],
}
# IMPALA deep network: (channels, residual blocks) per stage
_RESNET_IMPALA_STAGES: list[tuple[int, int]] = [(16, 2), (32, 2), (32, 2)]


class Encoder(ModelModule):
    """Base class of encoders; subclasses implement ``forward(obs)`` and ``get_out_size()``."""


def as_dict_space(obs_space: ObsSpace) -> gym.spaces.Dict:
    """A Dict observation space; a single space is put under the key ``"obs"`` as the env wrappers do."""
    if isinstance(obs_space, gym.spaces.Dict):
        return obs_space
    return gym.spaces.Dict({"obs": obs_space})


def is_image_space(space: gym.Space) -> bool:
    """Images are 3-dimensional Boxes laid out channels-first (CHW)."""
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 3


class MlpEncoder(Encoder):
    """MLP (``--encoder_mlp_layers``) over a flattened vector observation."""

    def __init__(self, cfg: Config, obs_space: gym.spaces.Box) -> None:
        super().__init__(cfg)
        input_size = math.prod(obs_space.shape)
        self.mlp_head = keep_torch_init(create_mlp(cfg.encoder_mlp_layers, input_size, nonlinearity(cfg)))
        self.out_size = mlp_out_size(cfg.encoder_mlp_layers, input_size)

    def forward(self, obs: Tensor) -> Tensor:
        return self.mlp_head(obs.float().flatten(1))  # [B, out_size]

    def get_out_size(self) -> int:
        return self.out_size


ConvFilter = list[int] | tuple[int, int, int, int] | str


def conv_filters_from_spec(in_channels: int, spec: ConvSpec) -> list[list[int]]:
    """``spec`` (out_channels, kernel_size, stride per layer) as ``ConvEncoderImpl``'s explicit filter list."""
    filters = []
    for out_channels, kernel_size, stride in spec:
        filters.append([in_channels, out_channels, kernel_size, stride])
        in_channels = out_channels
    return filters


def conv_head_from_filters(conv_filters: list[ConvFilter], activation: nn.Module) -> nn.Sequential:
    """Conv layers, each followed by ``activation``, no padding; ``"maxpool_2x2"`` entries add a 2x2 max-pool."""
    layers: list[nn.Module] = []
    for layer in conv_filters:
        if layer == "maxpool_2x2":
            layers.append(nn.MaxPool2d((2, 2)))
            continue
        if isinstance(layer, str) or len(layer) != 4:
            raise ValueError(
                f"conv filter {layer!r} is neither [in_channels, out_channels, kernel_size, stride] nor 'maxpool_2x2'"
            )
        in_channels, out_channels, kernel_size, stride = layer
        layers.extend([nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride), activation])
    return nn.Sequential(*layers)


class ConvEncoderImpl(nn.Module):
    """A conv head described layer by layer, then an MLP: ``forward(image [B, C, H, W]) -> [B, get_out_size()]``.

    The building block of ``ConvEncoder``, public so that a custom encoder can pick its own filters::

        filters = [[channels, 32, 8, 4], [32, 64, 4, 2], "maxpool_2x2"]
        self.enc = ConvEncoderImpl(obs_space.shape, filters, cfg.encoder_conv_mlp_layers, nonlinearity(cfg))

    ``conv_filters``: per layer ``[in_channels, out_channels, kernel_size, stride]`` (a ``Conv2d`` without padding
    followed by ``activation``) or the string ``"maxpool_2x2"``. ``extra_mlp_layers``: the widths of the linear layers
    after the flattened conv features (empty: none). ``activation`` has no parameters and is shared by every layer.
    The module compiles with ``torch.jit.script``.
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...] | list[int],
        conv_filters: list[ConvFilter],
        extra_mlp_layers: list[int],
        activation: nn.Module,
    ) -> None:
        super().__init__()
        obs_shape = tuple(obs_shape)
        if len(obs_shape) != 3:
            raise ValueError(f"ConvEncoderImpl needs a channels-first image shape (C, H, W), got {obs_shape}")
        self.conv_head = conv_head_from_filters(conv_filters, activation)
        self.conv_head_out_size = calc_num_elements(self.conv_head, obs_shape)
        self.mlp_layers = create_mlp(list(extra_mlp_layers), self.conv_head_out_size, activation)
        self.out_size = mlp_out_size(list(extra_mlp_layers), self.conv_head_out_size)

    def forward(self, obs: Tensor) -> Tensor:
        x = self.conv_head(obs.float())  # [B, C', H', W']
        return self.mlp_layers(x.flatten(1))  # [B, out_size]

    def get_out_size(self) -> int:
        """Width of the output: the last MLP layer's, or the flattened conv features' without an MLP."""
        return self.out_size


class _ConvMlpEncoder(Encoder):
    """Shared tail of the image encoders: conv head, flatten, ``--encoder_conv_mlp_layers``.

    Images may be uint8 or float; they are only cast here, scaling is the observation normaliser's job
    (``--obs_scale``), so the stored buffers can stay uint8.
    """

    def _build_mlp(self, cfg: Config, obs_shape: tuple[int, ...]) -> None:
        self.conv_head_out_size = calc_num_elements(self.conv_head, obs_shape)
        self.mlp_layers = create_mlp(cfg.encoder_conv_mlp_layers, self.conv_head_out_size, nonlinearity(cfg))
        self.out_size = mlp_out_size(cfg.encoder_conv_mlp_layers, self.conv_head_out_size)

    def forward(self, obs: Tensor) -> Tensor:
        x = self.conv_head(obs.float())  # [B, C', H', W']
        return self.mlp_layers(x.flatten(1))  # [B, out_size]

    def get_out_size(self) -> int:
        return self.out_size


def rename_legacy_keys(state_dict: dict, prefix: str, renames: dict[str, str]) -> None:
    """Rename, in place, the keys of an older state dict layout: ``prefix + old`` becomes ``prefix + new``.

    For a module's ``_load_from_state_dict``, so that checkpoints written before a submodule was renamed or nested
    still load. A rename is skipped when some key already has the new form (a checkpoint of the current layout).
    """
    for old, new in renames.items():
        old_prefix, new_prefix = prefix + old, prefix + new
        if any(key.startswith(new_prefix) for key in state_dict):
            continue
        for key in [key for key in state_dict if key.startswith(old_prefix)]:
            state_dict[new_prefix + key[len(old_prefix) :]] = state_dict.pop(key)


class ConvEncoder(Encoder):
    """Plain conv net chosen by ``--encoder_conv_architecture`` (convnet_simple, convnet_atari, convnet_impala).

    The layers sit one level down, in ``enc``, so that the state dict has Sample Factory 2's keys
    (``enc.conv_head.*``, ``enc.mlp_layers.*``) and checkpoints load in either library.
    """

    def __init__(self, cfg: Config, obs_space: gym.spaces.Box) -> None:
        super().__init__(cfg)
        arch = cfg.encoder_conv_architecture
        if arch not in _CONV_ARCHITECTURES:
            known = [*_CONV_ARCHITECTURES, "resnet_impala"]
            raise ValueError(f"--encoder_conv_architecture={arch!r} is not one of {known}")
        filters = conv_filters_from_spec(obs_space.shape[0], _CONV_ARCHITECTURES[arch])
        enc = ConvEncoderImpl(obs_space.shape, filters, cfg.encoder_conv_mlp_layers, nonlinearity(cfg))
        self.enc = keep_torch_init(enc)  # as Sample Factory 2's plain conv encoder: see keep_torch_init
        self.conv_head_out_size = self.enc.conv_head_out_size

    def forward(self, obs: Tensor) -> Tensor:
        return self.enc(obs)  # [B, out_size]

    def get_out_size(self) -> int:
        return self.enc.get_out_size()

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args, **kwargs) -> None:
        # checkpoints written before the layers moved into ``enc``
        rename_legacy_keys(state_dict, prefix, {"conv_head.": "enc.conv_head.", "mlp_layers.": "enc.mlp_layers."})
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class ResBlock(nn.Module):
    """Pre-activation residual block of the IMPALA network: ``x + conv(act(conv(act(x))))``.

    The first 3x3 conv maps ``input_ch`` to ``output_ch`` channels, the second keeps ``output_ch``; the skip
    connection adds the input unchanged, so the two must be equal.
    """

    def __init__(self, cfg: Config, input_ch: int, output_ch: int) -> None:
        super().__init__()
        if input_ch != output_ch:
            raise ValueError(
                f"ResBlock(input_ch={input_ch}, output_ch={output_ch}): the skip connection adds the input to the "
                "output, so both must have the same number of channels; change the channels with a conv before it"
            )
        self.res_block_core = nn.Sequential(
            nonlinearity(cfg),  # not in place: ``x`` is still needed for the skip connection
            nn.Conv2d(input_ch, output_ch, kernel_size=3, padding=1),
            nonlinearity(cfg),
            nn.Conv2d(output_ch, output_ch, kernel_size=3, padding=1),
        )

    def forward(self, x: Tensor) -> Tensor:
        return x + self.res_block_core(x)


class ResnetEncoder(_ConvMlpEncoder):
    """The deep IMPALA ResNet (``--encoder_conv_architecture=resnet_impala``).

    Each stage: 3x3 conv, 3x3 max-pool with stride 2 (halving the resolution), two residual blocks.
    """

    def __init__(self, cfg: Config, obs_space: gym.spaces.Box) -> None:
        super().__init__(cfg)
        layers: list[nn.Module] = []
        in_channels = obs_space.shape[0]
        for channels, num_blocks in _RESNET_IMPALA_STAGES:
            layers.append(nn.Conv2d(in_channels, channels, kernel_size=3, padding=1))
            layers.append(nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
            layers.extend(ResBlock(cfg, channels, channels) for _ in range(num_blocks))
            in_channels = channels
        layers.append(nonlinearity(cfg))
        self.conv_head = nn.Sequential(*layers)
        self._build_mlp(cfg, obs_space.shape)


def make_img_encoder(cfg: Config, obs_space: gym.spaces.Box) -> Encoder:
    """The image encoder selected by ``--encoder_conv_architecture`` for a CHW image space."""
    if cfg.encoder_conv_architecture == "resnet_impala":
        return ResnetEncoder(cfg, obs_space)
    return ConvEncoder(cfg, obs_space)


def make_sub_encoder(cfg: Config, key: str, space: gym.Space) -> Encoder:
    """Conv encoder for an image key, MLP encoder for a vector key."""
    if not isinstance(space, gym.spaces.Box):
        raise TypeError(f"observation key {key!r}: {space} is not supported by the default encoder, use a Box space")
    if is_image_space(space):
        return make_img_encoder(cfg, space)
    return MlpEncoder(cfg, space)


class MultiInputEncoder(Encoder):
    """One sub-encoder per observation key; their outputs are concatenated in the order of the space's keys."""

    def __init__(self, cfg: Config, obs_space: ObsSpace) -> None:
        super().__init__(cfg)
        spaces = as_dict_space(obs_space).spaces
        self.obs_keys = [key for key in spaces if key != ACTION_MASK_KEY]
        if not self.obs_keys:
            raise ValueError(f"observation space {obs_space} has no key to encode")
        self.encoders = nn.ModuleDict({key: make_sub_encoder(cfg, key, spaces[key]) for key in self.obs_keys})
        self.encoder_out_size = sum(encoder.get_out_size() for encoder in self.encoders.values())

    def forward(self, obs_dict: dict[str, Tensor]) -> Tensor:
        outputs = [self.encoders[key](obs_dict[key]) for key in self.obs_keys]
        return outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=1)  # [B, encoder_out_size]

    def get_out_size(self) -> int:
        return self.encoder_out_size


def default_make_encoder_func(cfg: Config, obs_space: ObsSpace) -> Encoder:
    """The library's encoder: a ``MultiInputEncoder`` over every observation key."""
    return MultiInputEncoder(cfg, obs_space)
