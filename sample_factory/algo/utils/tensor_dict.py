"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.utils.tensor_dict`."""

from sample_factory.utils.tensor_dict import (
    TensorDict,
    cat_tensordicts,
    copy_slots,
)

__all__ = [
    "TensorDict",
    "cat_tensordicts",
    "copy_slots",
]
