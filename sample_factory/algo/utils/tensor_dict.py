"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.utils.tensor_dict`."""

from sample_factory.utils.tensor_dict import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    TensorDict,
    cat_tensordicts,
    copy_slots,
)
