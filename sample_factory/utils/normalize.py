"""SF2's ``ObservationNormalizer``: a dict of observations shifted and scaled the way ``--obs_subtract_mean``,
``--obs_scale`` and ``--normalize_input`` ask, as a standalone module.

The actor-critics of this package normalise their inputs themselves (``sample_factory.model.running_mean_std``, with
fused paths for large image batches); this module gives code written against SF2's name the same arithmetic:
image keys (3-dimensional Boxes, CHW) get ``(x - obs_subtract_mean) / obs_scale``, then each key of
``--normalize_input_keys`` (all keys but ``action_mask`` by default) is normalised with running statistics of
everything seen in ``train()`` mode: ``clip((x - mean) / sqrt(var + 1e-5), -5, 5)``, where ``var`` is the sample
variance. The statistics are float64 buffers, so they are saved with ``state_dict()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gymnasium as gym
import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from sample_factory.utils.typing import Config

__all__ = ["ObservationNormalizer", "RunningObsStats"]

ACTION_MASK_KEY = "action_mask"  # the env's mask of allowed actions: passed through, never normalised
EPSILON = 1e-5
CLIP = 5.0


class RunningObsStats(nn.Module):
    """Running per-element mean and sample variance of one observation key, merged batch by batch (Chan et al.)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.shape = tuple(shape)
        self.register_buffer("running_mean", torch.zeros(self.shape, dtype=torch.float64))
        self.register_buffer("running_var", torch.ones(self.shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        """Merge the batch ``x`` (``[*batch, *shape]``) into the statistics."""
        x = x.reshape(-1, *self.shape).to(torch.float64)
        n = x.shape[0]
        if n == 0:
            return
        batch_var, batch_mean = torch.var_mean(x, dim=0, correction=0)
        total = self.count + n
        delta = batch_mean - self.running_mean
        squares = self.running_var * (self.count - 1).clamp(min=0) + batch_var * n + delta**2 * self.count * n / total
        self.running_mean += delta * n / total
        self.running_var.copy_(squares / (total - 1).clamp(min=1))
        self.count.copy_(total)

    def forward(self, x: Tensor) -> Tensor:
        """``x`` normalised with the statistics as they are, clipped to ``[-5, 5]``, in ``x``'s float dtype."""
        mean = self.running_mean.to(x.dtype)
        std = torch.sqrt(self.running_var + EPSILON).to(x.dtype)
        return ((x - mean) / std).clamp(-CLIP, CLIP)


class ObservationNormalizer(nn.Module):
    """Normalises dicts of observation tensors for ``obs_space`` as ``cfg`` asks (module docstring).

    ``forward(obs)`` returns a new dict of float32 tensors and never writes to the caller's tensors; a bare tensor
    is the key ``"obs"``. Statistics are updated only in ``train()`` mode, before they are applied to the batch.
    """

    def __init__(self, obs_space: gym.Space, cfg: Config) -> None:
        super().__init__()
        spaces = obs_space.spaces if isinstance(obs_space, gym.spaces.Dict) else {"obs": obs_space}
        self.sub_mean = float(cfg.obs_subtract_mean)
        self.scale = float(cfg.obs_scale)
        if self.scale == 0.0:
            raise ValueError("--obs_scale=0: observations are divided by it; use 1 for none, e.g. 255 for images")
        self.image_keys = frozenset(k for k, s in spaces.items() if isinstance(s, gym.spaces.Box) and len(s.shape) == 3)
        self.running_mean_std: nn.ModuleDict | None = None
        if cfg.normalize_input:
            keys = list(cfg.normalize_input_keys or [k for k in spaces if k != ACTION_MASK_KEY])
            missing = [k for k in keys if k not in spaces]
            if missing:
                raise ValueError(
                    f"--normalize_input_keys names {missing} that the observations lack; available keys: {list(spaces)}"
                )
            self.running_mean_std = nn.ModuleDict({k: RunningObsStats(spaces[k].shape) for k in keys})

    def _preprocess(self, key: str, x: Tensor) -> Tensor:
        y = x.to(torch.float32)
        if key in self.image_keys:
            if self.sub_mean != 0.0:
                y = y - self.sub_mean
            if self.scale != 1.0:
                y = y / self.scale
        return y

    def forward(self, obs: dict[str, Tensor] | Tensor) -> dict[str, Tensor]:
        if isinstance(obs, Tensor):
            obs = {"obs": obs}
        normalizers = {} if self.running_mean_std is None else self.running_mean_std
        out: dict[str, Tensor] = {}
        for key, x in obs.items():
            if key == ACTION_MASK_KEY:
                out[key] = x
                continue
            y = self._preprocess(key, x)
            if key in normalizers:
                if self.training:
                    normalizers[key].update(y)
                y = normalizers[key](y)
            out[key] = y
        return out
