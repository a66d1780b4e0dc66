"""Sample Factory 2's module path for the multiprocessing utilities; they live in
:mod:`sample_factory.messaging.multiprocessing_utils`."""

from sample_factory.messaging.multiprocessing_utils import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    NoLock,
    get_mp_ctx,
    get_mp_lock,
)
