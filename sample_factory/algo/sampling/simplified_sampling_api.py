"""Sample Factory 2's earlier module path of the synchronous sampling API (:mod:`.sync_sampling_api`)."""

from sample_factory.algo.sampling.sync_sampling_api import SyncSamplingAPI

__all__ = ["SyncSamplingAPI"]
