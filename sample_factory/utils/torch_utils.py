"""Small PyTorch functions shared by the model, the learner and the workers."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from sample_factory.compat.glibc_internals import reuse_freed_memory_for_large_tensors  # noqa: F401 (re-export)
from sample_factory.utils.typing import Config


def calc_num_elements(module: nn.Module, module_input_shape: tuple[int, ...]) -> int:
    """Number of output features of ``module`` for one input of ``module_input_shape`` (batch dimension excluded).

    Found with a dummy forward pass instead of by arithmetic, so any stack of convolutions and poolings works.
    """
    parameter = next(module.parameters(), None)
    device = parameter.device if parameter is not None else torch.device("cpu")
    dummy_input = torch.zeros(1, *module_input_shape, device=device)  # [1, *module_input_shape]
    with torch.no_grad():
        return module(dummy_input).numel()


def to_scalar(value: Tensor | np.ndarray | np.generic | float | int | bool) -> float | int | bool:
    """A Python number from a one-element tensor or array (for logging), other values unchanged."""
    if isinstance(value, (Tensor, np.ndarray, np.generic)):
        return value.item()
    return value


def init_torch_runtime(cfg: Config | None, max_num_threads: int | None = 1) -> None:
    """Per-process torch settings, called at the start of every worker process.

    Each worker is one of many processes sharing the CPU, so torch's default of one intra-op thread per core
    would oversubscribe it badly: cap the threads (``None`` leaves torch's default). ``cfg`` is accepted for
    a uniform call signature; no setting depends on it yet.
    """
    del cfg
    if max_num_threads is not None:
        torch.set_num_threads(max_num_threads)


def seed_torch(cfg: Config | None, process_offset: int) -> None:
    """Seed torch in this process from ``--seed`` (when set), distinct per process so streams differ.

    Action sampling in the inference workers and minibatch shuffling in the learner draw from torch's
    generator; without this, two runs with the same ``--seed`` would still differ.
    """
    seed = cfg.seed if cfg is not None else None
    if seed is not None:
        torch.manual_seed(int(seed) * 1_000_003 + process_offset)


def masked_select(x: Tensor, mask: Tensor, num_invalids: int | None = None) -> Tensor:
    """Elements of ``x`` ([B, ...]) where ``mask`` ([B]) is true.

    Pass ``num_invalids == 0`` when it is known that nothing is masked: ``x`` then comes back as is, without the
    copy and the device synchronisation that boolean indexing costs.
    """
    if num_invalids == 0:
        return x
    return x[mask.bool()]


class ValidMean:
    """Mean over the valid samples of one minibatch (0 when none is valid); differentiable, no device sync.

    The mask's float weights and the inverse count are computed once and reused by every loss term and statistic
    averaged over the same minibatch.
    """

    def __init__(self, valids: Tensor) -> None:
        self.valids = valids  # [B] bool
        self.weights = valids.float()  # [B]
        self.inv_count = 1.0 / self.weights.sum().clamp(min=1.0)

    def __call__(self, x: Tensor) -> Tensor:
        return (x * self.weights).sum() * self.inv_count

    @classmethod
    def rows(cls, valids: Tensor) -> tuple[list[ValidMean], Tensor, Tensor]:
        """One ``ValidMean`` per row of ``valids`` ([M, B]: M minibatches), with the weights ([M, B]) and inverse
        counts ([M]) of all rows computed at once and also returned; each row's are views of them."""
        weights = valids.float()
        inv_counts = 1.0 / weights.sum(dim=1).clamp(min=1.0)
        means = []
        for m in range(valids.shape[0]):
            mean = cls.__new__(cls)
            mean.valids, mean.weights, mean.inv_count = valids[m], weights[m], inv_counts[m]
            means.append(mean)
        return means, weights, inv_counts


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of ``x`` over the elements where ``mask`` is true (0 when none is); differentiable, no sync."""
    return ValidMean(mask.bool())(x)


def synchronize(cfg: Config | None, device: torch.device | str) -> None:
    """Waits for queued CUDA work on ``device`` so timings measure it; a no-op on CPU.

    ``cfg`` is accepted for a uniform call signature.
    """
    del cfg
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def trains_faster_channels_last(model: nn.Module, device: torch.device) -> bool:
    """Whether the learner should train ``model`` with its conv weights and image batches channels-last (NHWC).

    On the CPU, oneDNN's NHWC convolutions avoid reordering every activation to and from its blocked layout: a
    ``convnet_simple`` forward + backward on 512 Doom frames (3x72x128) took 18-26 % less time, the conversion of
    the input batch included. Inference batches of 4-16 frames ran 4-12 % slower in NHWC (2 frames 9 % faster),
    so only the learner uses it; on a GPU the choice belongs to cuDNN and mixed precision, so it is left alone there.
    """
    return device.type == "cpu" and any(isinstance(m, nn.Conv2d) for m in model.modules())


def as_channels_last(x: Tensor) -> Tensor:
    """``x`` in NHWC memory order if it is a floating-point image batch ``[N, C, H, W]``, else ``x`` itself."""
    if x.dim() == 4 and x.is_floating_point():
        return x.contiguous(memory_format=torch.channels_last)
    return x
