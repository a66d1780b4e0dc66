"""Sample Factory 2's module path for the multiprocessing helpers; they live in
:mod:`sample_factory.messaging.multiprocessing_utils`."""

from sample_factory.messaging.multiprocessing_utils import NoLock, get_mp_ctx, get_mp_lock

__all__ = ["NoLock", "get_mp_ctx", "get_mp_lock"]
