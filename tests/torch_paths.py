"""What this torch offers the fast paths, for the tests: where a path cannot be taken (torch's private names on a torch
outside ``VERIFIED_TORCH``; the fused Adam on the CPU before torch 2.4), the tests of that path are skipped with the
reason, and the tests of its fallback (which force the fallback, so they run on every torch) say what happens."""

from __future__ import annotations

import pytest
import torch

from sample_factory.compat import torch_internals


def _cpu_fused_adam() -> bool:
    try:
        torch.optim.Adam([torch.zeros(1, requires_grad=True)], fused=True)
    except RuntimeError:
        return False
    return True


PRIVATE_PATHS = torch_internals.torch_version() in torch_internals.VERIFIED_TORCH
CPU_FUSED_ADAM = _cpu_fused_adam()

needs_private_paths = pytest.mark.skipif(
    not PRIVATE_PATHS,
    reason=f"torch {torch.__version__} is not a version its private paths were verified on: they are off here "
    "(this file's fallback tests run)",
)
needs_cpu_fused_adam = pytest.mark.skipif(
    not CPU_FUSED_ADAM,
    reason=f"torch {torch.__version__} fuses Adam on CUDA only: the lean and flat Adam paths, which build on the "
    "fused one, are off (tests/algo/learning/test_optimizers.py's fallback tests run)",
)
