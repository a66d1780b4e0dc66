"""Running mean/variance normalisation of observations and returns (``--normalize_input``, ``--normalize_returns``).

Statistics are merged batch by batch with the parallel variance algorithm (Chan et al. 1979), so the result
equals the mean and the sample variance (Bessel-corrected, divided by ``count - 1``) of everything seen so far,
whatever the batch sizes. The sample variance is the unbiased estimate of the input's variance: normalised data
then has a sample standard deviation of one even when the normaliser has seen only a few samples (the population
variance would leave two samples with a standard deviation of sqrt(2)). They are kept in float64 buffers: a
float32 count or sum of squares loses precision after a few hundred million samples. Being buffers, they live in
``state_dict()`` and travel with checkpoints and with the weights shared between the learner and the inference
workers.

Only the learner updates the statistics (modules in ``train()`` mode); inference workers run in ``eval()`` mode
and only apply them. The module compiles with ``torch.jit.script``; the cache of the converted statistics is used
only in eager mode.
"""

from __future__ import annotations

from collections.abc import Iterable

import gymnasium as gym
import torch
from torch import Tensor, nn

from sample_factory.compat.torch_internals import tensor_version

DEFAULT_EPSILON = 1e-5
DEFAULT_CLIP = 5.0


def _writable_float(x: Tensor) -> Tensor:
    """``x`` itself if it may be overwritten in place, else a float copy (integer pixels, autograd-tracked input)."""
    if not x.is_floating_point():
        return x.float()
    if x.requires_grad and torch.is_grad_enabled():
        return x.clone()
    return x


# per-sample size from which moments are computed in float32 (images); smaller inputs are summed in float64
LARGE_SAMPLE_NUMEL = 4096


def _batch_moments(x: Tensor, dims: list[int], large_numel: int = LARGE_SAMPLE_NUMEL) -> tuple[Tensor, Tensor]:
    """float64 mean and population variance of ``x`` over ``dims`` (the batch dim 0, and more for per-channel).

    ``x`` is not modified. Returns, scalars and vector observations are summed in float64, exactly. Images (integer
    pixels, or samples of at least ``LARGE_SAMPLE_NUMEL`` values) use float32 in two passes, the mean and then the
    mean of squared deviations in a scratch copy: no float64 copy of the batch (450 MB for 2048 Doom frames), a
    relative error ~1e-7 on pixel statistics, and 5x faster on CPU than ``torch.var_mean`` over the leading
    dimension (measured 12 vs 62 ms for 512 Doom frames).
    """
    large = x.dim() > 1 and x[0].numel() >= large_numel
    if x.is_floating_point() and (x.dtype == torch.float64 or not large):
        batch_var, batch_mean = torch.var_mean(x.to(torch.float64), dim=dims, correction=0)
        return batch_mean, batch_var
    deviations = x.to(torch.float32, copy=True)  # scratch, overwritten below
    batch_mean = deviations.mean(dim=dims, keepdim=True)
    batch_var = deviations.sub_(batch_mean).square_().mean(dim=dims)
    return batch_mean.squeeze(dims).to(torch.float64), batch_var.to(torch.float64)


def _merge_batch_moments(
    mean: Tensor, var: Tensor, count: Tensor, batch_mean: Tensor, batch_var: Tensor, batch_count: int
) -> Tensor:
    """Merges a batch's float64 moments into ``mean`` and ``var`` in place; returns the new sample count.

    ``var`` is the sample variance of ``count`` samples, ``batch_var`` the population variance of ``batch_count``
    ones (Chan et al.'s pairwise update). One function for ``RunningMeanStdInPlace.update`` and
    ``normalize_pixels_blockwise`` keeps the two paths bitwise equal. ``count`` (one value, 0-dim or ``(1,)``) is
    read as a scalar so that it broadcasts over statistics of any shape, scalar ones included.
    """
    count = count.reshape([])
    total = count + batch_count
    delta = batch_mean - mean
    sum_sq = var * (count - 1.0).clamp(min=0.0) + batch_var * batch_count + delta.square() * count * batch_count / total
    mean.add_(delta * batch_count / total)
    var.copy_(sum_sq / (total - 1.0).clamp(min=1.0))
    return total


class RunningMeanStdInPlace(nn.Module):
    """Normalises tensors whose trailing dimensions are ``input_shape`` with running statistics.

    ``input_shape`` is ``()`` for scalars such as returns, ``(obs_dim,)`` for vector observations and
    ``(C, H, W)`` for images; every leading dimension of the input counts as a batch dimension.

    Statistics are per element by default. ``per_channel`` keeps one mean and variance per channel (the first
    dimension of ``input_shape``, e.g. ``C`` of a ``[C, H, W]`` image), pooled over the other dimensions: every
    pixel of a channel is then shifted and scaled alike, which keeps the spatial structure of images. ``norm_only``
    divides by the standard deviation without subtracting the mean, for inputs whose sign or zero point carries
    meaning (rewards, returns).
    """

    def __init__(
        self,
        input_shape: tuple[int, ...] | int = (),
        epsilon: float = DEFAULT_EPSILON,
        clip: float = DEFAULT_CLIP,
        per_channel: bool = False,
        norm_only: bool = False,
    ):
        super().__init__()
        self.input_shape = (input_shape,) if isinstance(input_shape, int) else tuple(input_shape)
        if per_channel and len(self.input_shape) < 1:
            raise ValueError("RunningMeanStdInPlace(per_channel=True) needs an input_shape with a channel dimension")
        self.epsilon = float(epsilon)
        self.clip = float(clip)
        self.per_channel = per_channel
        self.norm_only = norm_only
        # lists, not tuples: TorchScript indexes and concatenates them (see update())
        self._samples_shape = [-1] + list(self.input_shape)  # [N, *input_shape]
        # per channel, every value of a channel in every sample is one observation of that channel's distribution
        self._reduce_dims = [0] + list(range(2, len(self.input_shape) + 1)) if per_channel else [0]
        # per channel: [C, 1, 1, ...] so the statistics broadcast over the remaining dimensions of each sample
        stats_shape = (self.input_shape[0],) + (1,) * (len(self.input_shape) - 1) if per_channel else self.input_shape
        self.register_buffer("running_mean", torch.zeros(stats_shape, dtype=torch.float64))
        self.register_buffer("running_var", torch.ones(stats_shape, dtype=torch.float64))
        # a one-element vector, as Sample Factory 2 stores it, so checkpoints load in either library
        self.register_buffer("count", torch.zeros(1, dtype=torch.float64))
        # (running_mean, running_var, (their versions, dtype)) of the cached (mean, std); see _mean_std()
        self._cached_key = None
        self._cached_mean_std = None

    def update(self, x: Tensor) -> None:
        """Merges batch ``x`` ([*batch, *input_shape]) into the mean and sample variance of everything seen.

        The running variance times ``count - 1`` is the sum of squared deviations so far (none before two samples:
        the initial variance of one is a placeholder that only keeps an unused normaliser an identity).
        """
        with torch.no_grad():
            x = x.reshape(self._samples_shape)
            if x.shape[0] == 0:
                return
            batch_count = x.numel() // self.running_mean.numel()
            batch_mean, batch_var = _batch_moments(x, self._reduce_dims)
            total = _merge_batch_moments(
                self.running_mean,
                self.running_var,
                self.count,
                batch_mean.reshape(self.running_mean.shape),
                batch_var.reshape(self.running_var.shape),
                batch_count,
            )
            self.count.copy_(total)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args, **kwargs) -> None:
        """Also accepts the 0-dim statistics of older checkpoints (``count``, and the mean and variance of a
        normaliser of ``input_shape=(1,)`` that was saved with ``()``): one value either way, reshaped to ``(1,)``."""
        for name in ("running_mean", "running_var", "count"):
            key, own = prefix + name, getattr(self, name)
            stored = state_dict.get(key)
            if isinstance(stored, Tensor) and stored.dim() == 0 and tuple(own.shape) == (1,):
                state_dict[key] = stored.reshape(1)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @torch.jit.unused
    def _mean_std(self, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """The running mean and ``sqrt(var + eps)`` in ``dtype``, recomputed only when the statistics changed.

        An inference worker normalises every small batch with statistics that change once per weight update; the
        four tensor operations of the conversion were a third of that normalisation (CartPole, 12 observations: 25
        us per call before, 17 us with the cache). The statistics change in place (``update``, ``load_state_dict``:
        their version counters move) or are replaced (``.to(device)``: other tensor objects); the key sees both.
        """
        mean_src, var_src = self.running_mean, self.running_var
        key = (tensor_version(mean_src), tensor_version(var_src), dtype)  # None: unknown, so no cache
        cached = self._cached_key
        if key[0] is not None and cached is not None and cached[0] is mean_src and cached[1] is var_src:
            if cached[2] == key:
                return self._cached_mean_std
        with torch.inference_mode(False):  # normal tensors even inside inference mode: autograd may save them later
            mean_std = (mean_src.to(dtype), torch.sqrt(var_src + self.epsilon).to(dtype))
        self._cached_key, self._cached_mean_std = (mean_src, var_src, key), mean_std
        return mean_std

    def forward(self, x: Tensor, denormalize: bool = False) -> Tensor:
        """Normalises ``x`` to ``clamp((x - mean) / sqrt(var + eps), -clip, clip)``, or inverts that if ``denormalize``.

        With ``norm_only`` the mean is neither subtracted nor added back, and nothing is clipped: ``clip`` bounds a
        standardised value to that many standard deviations from the mean, which a merely rescaled value is not.
        In training mode the statistics are first updated from ``x`` (never when denormalising). ``x`` is
        overwritten in place when it is a floating-point tensor that autograd does not track, saving a copy of large
        observation batches; the result is returned either way (a new float32 tensor for integer inputs).
        """
        if self.training and not denormalize:
            self.update(x)
        out = _writable_float(x)
        if torch.jit.is_scripting():
            mean = self.running_mean.to(out.dtype)
            std = torch.sqrt(self.running_var + self.epsilon).to(out.dtype)
        else:
            mean, std = self._mean_std(out.dtype)
        if denormalize:
            out.mul_(std)
            return out if self.norm_only else out.add_(mean)
        if self.norm_only:
            return out.div_(std)
        return out.sub_(mean).div_(std).clamp_(-self.clip, self.clip)


# bytes of float32 values normalised together by ``normalize_pixels_blockwise``: a block stays in a core's L2 cache
BLOCK_BYTES = 2 << 20
# pixel positions per block are a multiple of this (the widest vector group torch sums columns in, AVX-512 unrolled)
BLOCK_ALIGN = 64


@torch.no_grad()
def normalize_pixels_blockwise(
    normalizer: RunningMeanStdInPlace, pixels: Tensor, subtract: float, scale: float
) -> Tensor:
    """``normalizer`` in train mode applied to ``(pixels.float() - subtract) / scale``, block of pixels by block.

    A batch of 512 Doom frames as float32 is 57 MB: the unfused steps (conversion, scaling, the two passes of the
    batch moments, the update, subtraction, division, clipping) each stream it through memory, and on a loaded CPU
    they took a sixth of the learner's time. With per-element statistics every pixel position is independent of the
    others, so this runs all of those steps on ``BLOCK_BYTES`` of pixel positions at a time, over every sample, while
    they are in cache. Each value goes through the very operations of the unfused path in the same order (the
    moments are the float32 two-pass ones of ``_batch_moments`` for large samples), so the result and the updated
    statistics are bitwise the same.

    Args:
        normalizer: per-element statistics (not ``per_channel``, not ``norm_only``) of ``input_shape``.
        pixels: integer tensor ``[B, *input_shape]``, ``B >= 1``; not modified.
        subtract, scale: ``--obs_subtract_mean`` and ``--obs_scale`` (0 and 1 leave the values as they are).

    Returns:
        a new float32 tensor ``[B, *input_shape]``.
    """
    num_samples = pixels.shape[0]
    source = pixels.reshape(num_samples, -1)
    out = torch.empty(source.shape, dtype=torch.float32, device=source.device)
    # blocks of whole groups of BLOCK_ALIGN positions, the last one also taking the remainder: torch sums the
    # columns of a block in vector groups and the rest one by one, and only this cut groups every sum as a single
    # pass over the whole batch does
    width = source.shape[1]
    block = max(BLOCK_ALIGN, BLOCK_BYTES // (4 * num_samples) // BLOCK_ALIGN * BLOCK_ALIGN)
    starts = list(range(0, max(width - block + 1, 1), block))
    ends = starts[1:] + [width]
    scratch = torch.empty_like(out[:, : max(end - start for start, end in zip(starts, ends, strict=True))])
    running_mean, running_var = normalizer.running_mean.view(-1), normalizer.running_var.view(-1)
    count = normalizer.count.clone()
    for start, end in zip(starts, ends, strict=True):
        values = out[:, start:end]
        values.copy_(source[:, start:end])
        if subtract != 0.0:
            values.sub_(subtract)
        if scale != 1.0:
            values.div_(scale)
        batch_mean = values.mean(dim=0, keepdim=True)
        batch_var = torch.sub(values, batch_mean, out=scratch[:, : end - start]).square_().mean(dim=0)
        mean, var = running_mean[start:end], running_var[start:end]
        _merge_batch_moments(
            mean, var, count, batch_mean.squeeze(0).to(torch.float64), batch_var.to(torch.float64), num_samples
        )
        std = torch.sqrt(var + normalizer.epsilon)
        values.sub_(mean.to(torch.float32)).div_(std.to(torch.float32)).clamp_(-normalizer.clip, normalizer.clip)
    normalizer.count.copy_(count + num_samples)
    return out.view(pixels.shape)


def normalizes_blockwise(normalizer: nn.Module, pixels: Tensor) -> bool:
    """Whether ``normalize_pixels_blockwise`` gives exactly what ``normalizer`` would in train mode for ``pixels``.

    Only this module's own class with per-element statistics qualifies, for integer pixels on the CPU with
    samples large enough for the float32 moments (``LARGE_SAMPLE_NUMEL``); a GPU streams the batch fast enough.
    """
    return (
        type(normalizer) is RunningMeanStdInPlace
        and normalizer.training
        and not normalizer.per_channel
        and not normalizer.norm_only
        and not pixels.is_floating_point()
        and pixels.device.type == "cpu"
        and pixels.dim() > 1
        and pixels.shape[0] > 0
        and pixels[0].numel() >= LARGE_SAMPLE_NUMEL
        and tuple(pixels.shape[1:]) == normalizer.input_shape
    )


class RunningMeanStdDictInPlace(nn.Module):
    """One ``RunningMeanStdInPlace`` per normalised key of a ``Dict`` observation space.

    ``keys_to_normalize`` (``--normalize_input_keys``) selects the keys; by default every ``Box`` key except
    ``action_mask``, which must keep its 0/1 meaning. Other keys pass through untouched. ``per_channel`` and
    ``norm_only`` are passed to every key's normaliser (statistics per channel, the first dimension; rescaling only).
    """

    def __init__(
        self,
        obs_space: gym.spaces.Dict,
        keys_to_normalize: list[str] | None = None,
        epsilon: float = DEFAULT_EPSILON,
        clip: float = DEFAULT_CLIP,
        per_channel: bool = False,
        norm_only: bool = False,
    ):
        super().__init__()
        if keys_to_normalize is None:
            keys_to_normalize = [
                key
                for key, space in obs_space.spaces.items()
                if isinstance(space, gym.spaces.Box) and key != "action_mask"
            ]
        unknown = sorted(set(keys_to_normalize) - set(obs_space.spaces))
        if unknown:
            raise ValueError(
                f"--normalize_input_keys {unknown} not in the observation space keys {list(obs_space.spaces)}"
            )
        self.running_mean_std = nn.ModuleDict(
            {
                key: RunningMeanStdInPlace(obs_space[key].shape, epsilon, clip, per_channel, norm_only)
                for key in keys_to_normalize
            }
        )

    def forward(self, obs_dict: dict[str, Tensor]) -> dict[str, Tensor]:
        """Normalises the selected entries of ``obs_dict``, replacing them in the dict, and returns the dict."""
        for key, normalizer in self.running_mean_std.items():
            obs_dict[key] = normalizer(obs_dict[key])
        return obs_dict

    # the per-key normalisers, read like the dict they are kept in
    def __getitem__(self, key: str) -> RunningMeanStdInPlace:
        return self.running_mean_std[key]

    def __contains__(self, key: object) -> bool:
        return key in self.running_mean_std

    def keys(self) -> Iterable[str]:
        """The normalised observation keys."""
        return self.running_mean_std.keys()

    def items(self) -> Iterable[tuple[str, nn.Module]]:
        """``(key, normaliser)`` pairs."""
        return self.running_mean_std.items()


class ObsNormalizer(nn.Module):
    """The observation normaliser of an actor-critic (``ActorCritic.obs_normalizer``, with ``--normalize_input``).

    A ``RunningMeanStdDictInPlace`` one level down, in ``running_mean_std``: state dicts then have Sample Factory 2's
    keys (``obs_normalizer.running_mean_std.running_mean_std.<obs key>.running_mean``) and checkpoints load in either
    library. ``--obs_subtract_mean`` and ``--obs_scale`` are applied before, by ``ActorCritic.normalize_obs``.
    """

    def __init__(
        self,
        obs_space: gym.spaces.Dict,
        keys_to_normalize: list[str] | None = None,
        epsilon: float = DEFAULT_EPSILON,
        clip: float = DEFAULT_CLIP,
    ):
        super().__init__()
        self.running_mean_std = RunningMeanStdDictInPlace(obs_space, keys_to_normalize, epsilon, clip)

    def forward(self, obs_dict: dict[str, Tensor]) -> dict[str, Tensor]:
        """Normalises the selected entries of ``obs_dict`` in the dict, and returns it."""
        return self.running_mean_std(obs_dict)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args, **kwargs) -> None:
        """Also accepts checkpoints written before the extra level: ``running_mean_std.<key>.*`` is moved to
        ``running_mean_std.running_mean_std.<key>.*``."""
        outer, inner = prefix + "running_mean_std.", prefix + "running_mean_std.running_mean_std."
        if not any(key.startswith(inner) for key in state_dict):
            for key in [key for key in state_dict if key.startswith(outer)]:
                state_dict[inner + key[len(outer) :]] = state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


# ---- merging statistics kept apart (the ranks of a distributed run) ------------------------------------------------
# A normaliser's statistics as (count, mean, m2): the number of samples, their mean and the sum of their squared
# deviations from it. What was added to them since an earlier state is (n, s1, s2) about that state's mean c: the
# number of new samples, the sum of (x - c) and the sum of (x - c)^2 over them. Sums of that form over several
# ranks simply add up, which is what lets one all-reduce merge every rank's new data exactly (in float64).
Moments = tuple[Tensor, Tensor, Tensor]


def moments_of(normalizer: RunningMeanStdInPlace) -> Moments:
    """A copy of ``(count, mean, m2)``; ``m2 = var * (count - 1)`` undoes the sample variance's Bessel correction.

    ``count`` is 0-dim (the buffer is a one-element vector) so that it broadcasts over statistics of any shape.
    """
    count = normalizer.count.clone().reshape([])
    m2 = normalizer.running_var * (count - 1.0).clamp(min=0.0)
    return count, normalizer.running_mean.clone(), m2


def set_moments(normalizer: RunningMeanStdInPlace, moments: Moments) -> None:
    """Write ``(count, mean, m2)`` back as the normaliser's statistics (the variance of no sample stays as it was)."""
    count, mean, m2 = moments
    with torch.no_grad():
        var = torch.where(count > 0, m2.clamp(min=0.0) / (count - 1.0).clamp(min=1.0), normalizer.running_var)
        normalizer.running_mean.copy_(mean)
        normalizer.running_var.copy_(var)
        normalizer.count.copy_(count)


def moments_added(current: Moments, earlier: Moments) -> Moments:
    """``(n, s1, s2)`` about ``earlier``'s mean of the samples that ``current`` holds beyond ``earlier``.

    Over all of ``current``'s samples, the sum of ``(x - c)`` is ``count * (mean - c)`` and the sum of ``(x - c)^2``
    is ``m2 + count * (mean - c)^2``; ``earlier``'s samples contribute 0 and its ``m2`` to them.
    """
    count, mean, m2 = current
    earlier_count, earlier_mean, earlier_m2 = earlier
    shift = mean - earlier_mean
    return count - earlier_count, count * shift, m2 + count * shift.square() - earlier_m2


def recentre(added: Moments, old_centre: Tensor, new_centre: Tensor) -> Moments:
    """The same ``(n, s1, s2)`` about ``new_centre`` instead of ``old_centre``."""
    n, s1, s2 = added
    d = old_centre - new_centre
    return n, s1 + n * d, s2 + 2.0 * d * s1 + n * d.square()


def merge_moments(base: Moments, added: Moments) -> Moments:
    """``base`` with ``added`` (``(n, s1, s2)`` about ``base``'s mean) merged in: the statistics of all samples."""
    count, mean, m2 = base
    n, s1, s2 = added
    total = count + n
    safe_total = total.clamp(min=1.0)
    return total, mean + s1 / safe_total, m2 + s2 - s1.square() / safe_total
