"""Small constants shared by the algorithm code, and helpers too small for a module of their own."""

from __future__ import annotations

from typing import Any

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


def set_attr_if_exists(obj: Any, attr_name: str, attr_value: Any) -> bool:
    """Set ``obj.attr_name = attr_value`` only when ``obj`` already has that attribute; True when it was set.

    For settings that only some objects of a family understand (an env wrapper that may or may not expose a knob):
    the ones without it are left as they are instead of growing a new attribute that nothing reads.
    """
    if not hasattr(obj, attr_name):
        return False
    setattr(obj, attr_name, attr_value)
    return True
