"""Small constants shared by the algorithm code."""

from __future__ import annotations

EPS = 1e-8

# Key under which a rollout worker's per-episode stats message carries the finished episode's numbers
# (reward, length, true objective, ``info["episode_extra_stats"]``): handlers registered with
# ``runner.register_episodic_stats_handler`` read ``msg[EPISODIC]``.
EPISODIC = "episodic"


class ExperimentStatus:
    """Exit status of a training, evaluation or enjoy run (also the process exit code)."""

    SUCCESS, FAILURE, INTERRUPTED = 0, 1, 2


def memory_stats(process: str, device) -> dict[str, float]:
    """Resident memory of this process (and CUDA memory when on a GPU), in MB, for the ``stats/`` summaries."""
    import psutil
    import torch

    stats = {f"memory_{process}": psutil.Process().memory_info().rss / 1e6}
    if getattr(device, "type", str(device)) == "cuda" and torch.cuda.is_available():
        stats[f"gpu_mem_{process}"] = torch.cuda.memory_allocated(device) / 1e6
        stats[f"gpu_cache_{process}"] = torch.cuda.memory_reserved(device) / 1e6
    return stats
