"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.utils.torch_utils`."""

from sample_factory.utils.torch_utils import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    HEAP_TRIM_THRESHOLD_BYTES,
    ValidMean,
    as_channels_last,
    calc_num_elements,
    init_torch_runtime,
    masked_mean,
    masked_select,
    reuse_freed_memory_for_large_tensors,
    seed_torch,
    synchronize,
    to_scalar,
    trains_faster_channels_last,
)
