"""Print the GPUs this process may use without initialising CUDA: ``python -m sample_factory.utils.get_available_gpus``.

One line of comma-separated physical GPU indices (empty without GPUs), narrowed by ``CUDA_VISIBLE_DEVICES`` as CUDA
would: what a launcher script reads before choosing each run's GPUs. The counting lives in
:mod:`sample_factory.utils.gpu_utils`.
"""

from __future__ import annotations

import sys

from sample_factory.utils.gpu_utils import get_gpus_without_triggering_pytorch_cuda_initialization

__all__ = ["get_gpus_without_triggering_pytorch_cuda_initialization", "main"]


def main() -> int:
    """Print the available GPUs as ``0,1,3`` and return the exit status 0."""
    gpus = get_gpus_without_triggering_pytorch_cuda_initialization()
    print(",".join(str(gpu) for gpu in gpus))
    return 0


if __name__ == "__main__":
    sys.exit(main())
