"""Which GPUs a process may use, decided before anything initialises CUDA.

CUDA reads ``CUDA_VISIBLE_DEVICES`` once, when the first CUDA call in a process happens, so each worker
must set it before touching ``torch.cuda``. That is why GPUs are counted with ``nvidia-smi`` or read from
the variable rather than through torch.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config

__all__ = [
    "CUDA_ENVVAR",
    "cuda_available",
    "get_gpus_without_triggering_pytorch_cuda_initialization",
    "get_available_gpus",
    "gpus_for_process",
    "set_gpus_for_process",
    "set_global_cuda_envvars",
]

CUDA_ENVVAR = "CUDA_VISIBLE_DEVICES"

_NVIDIA_SMI_TIMEOUT_S = 30.0
# "GPU 0: NVIDIA H200 (UUID: GPU-1234abcd-...)"; MIG devices are listed on indented lines and ignored.
_GPU_LINE = re.compile(r"^GPU (\d+):.*\(UUID: ([^)]+)\)")


def cuda_available() -> bool:
    """True when torch is installed with CUDA support and sees at least one device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _parse_nvidia_smi(output: str) -> list[tuple[int, str]]:
    """``(index, uuid)`` of every physical GPU in the output of ``nvidia-smi -L``."""
    gpus = []
    for line in output.splitlines():
        match = _GPU_LINE.match(line)
        if match:
            gpus.append((int(match.group(1)), match.group(2).strip()))
    return gpus


def _query_nvidia_smi(envvars: Mapping[str, str]) -> str | None:
    """Output of ``nvidia-smi -L``, or None where the tool is missing or fails (no driver, no GPU)."""
    executable = shutil.which("nvidia-smi", path=envvars.get("PATH"))
    if executable is None:
        return None
    try:
        result = subprocess.run(
            [executable, "-L"],
            capture_output=True,
            text=True,
            env=dict(envvars),
            timeout=_NVIDIA_SMI_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        log.debug("nvidia-smi -L failed: %s", error)
        return None
    return result.stdout if result.returncode == 0 else None


def _apply_visible_devices(gpus: list[tuple[int, str]], visible: str) -> list[int]:
    """Physical indices selected by a ``CUDA_VISIBLE_DEVICES`` value, in its order.

    Like CUDA itself, entries may be indices or (prefixes of) UUIDs, and the list ends at the first
    entry that names no device (so ``-1`` hides every GPU).
    """
    selected: list[int] = []
    for entry in (part.strip() for part in visible.split(",")):
        index = _resolve_device(gpus, entry)
        if index is None or index in selected:
            break
        selected.append(index)
    return selected


def _resolve_device(gpus: list[tuple[int, str]], entry: str) -> int | None:
    if entry.isdigit():
        index = int(entry)
        return index if any(gpu_index == index for gpu_index, _ in gpus) else None
    if not entry:
        return None
    matches = [gpu_index for gpu_index, uuid in gpus if uuid.startswith(entry) or uuid[4:].startswith(entry)]
    return matches[0] if len(matches) == 1 else None


def get_gpus_without_triggering_pytorch_cuda_initialization(envvars: Mapping[str, str] = os.environ) -> list[int]:
    """Physical indices of the GPUs a process with environment ``envvars`` may use; [] without GPUs.

    Counts with ``nvidia-smi -L`` (when it is installed) so that the calling process can still choose its
    own ``CUDA_VISIBLE_DEVICES`` afterwards, then narrows the list to ``envvars["CUDA_VISIBLE_DEVICES"]``.
    """
    output = _query_nvidia_smi(envvars)
    if output is None:
        return []
    gpus = _parse_nvidia_smi(output)
    visible = envvars.get(CUDA_ENVVAR)
    if visible is None:
        return [index for index, _ in gpus]
    return _apply_visible_devices(gpus, visible)


def get_available_gpus(envvars: Mapping[str, str] = os.environ) -> list[int]:
    """GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` when it holds plain indices, else ``nvidia-smi``.

    Workers call this at start-up; reading the variable the runner already set (see
    :func:`set_global_cuda_envvars`) spares every process a ``nvidia-smi`` call.
    """
    visible = envvars.get(CUDA_ENVVAR)
    if visible is not None:
        entries = [part.strip() for part in visible.split(",")] if visible.strip() else []
        if all(entry.isdigit() for entry in entries):
            return [int(entry) for entry in entries]
    return get_gpus_without_triggering_pytorch_cuda_initialization(envvars)


def gpus_for_process(process_idx: int, num_gpus_per_process: int, gpu_mask: Sequence[int] | None = None) -> list[int]:
    """The ``num_gpus_per_process`` GPUs of process ``process_idx``, spreading processes round-robin.

    ``gpu_mask`` restricts the choice to those positions in the list of available GPUs (e.g. the values
    of ``--actor_worker_gpus``). Returns [] when no GPU is available or none is requested.
    """
    available = get_available_gpus()
    if gpu_mask is not None:
        available = _mask_gpus(available, gpu_mask)
    if not available or num_gpus_per_process <= 0:
        return []
    first = process_idx * num_gpus_per_process
    return [available[(first + offset) % len(available)] for offset in range(num_gpus_per_process)]


def _mask_gpus(available: list[int], gpu_mask: Sequence[int]) -> list[int]:
    if not available:
        return []
    unknown = [position for position in gpu_mask if not 0 <= position < len(available)]
    if unknown:
        raise ValueError(
            f"GPU mask {list(gpu_mask)} refers to GPUs {unknown}, but only {len(available)} are available "
            f"({available}): pass positions 0..{len(available) - 1} (e.g. to --actor_worker_gpus)"
        )
    return [available[position] for position in gpu_mask]


def set_gpus_for_process(
    process_idx: int,
    num_gpus_per_process: int,
    process_type: str,
    gpu_mask: Sequence[int] | None = None,
) -> list[int]:
    """Pick this process's GPUs and expose only those to CUDA; must run before the first CUDA call.

    Sets ``CUDA_VISIBLE_DEVICES`` to "" when the process gets no GPU, so it cannot grab one by accident.
    Returns the physical indices chosen.
    """
    gpus = gpus_for_process(process_idx, num_gpus_per_process, gpu_mask)
    os.environ[CUDA_ENVVAR] = ",".join(str(gpu) for gpu in gpus)
    if gpus:
        log.info("%s %d: set %s=%s", process_type, process_idx, CUDA_ENVVAR, os.environ[CUDA_ENVVAR])
    else:
        log.debug("%s %d: no GPUs, set %s to an empty string", process_type, process_idx, CUDA_ENVVAR)
    return gpus


def set_global_cuda_envvars(cfg: Config) -> None:
    """Pin ``CUDA_VISIBLE_DEVICES`` in the main process so every child computes the same GPU list.

    A value set by the user is kept. ``--device=cpu`` hides all GPUs, unless ``--actor_worker_gpus`` asks for
    some: then the rollout workers need them (envs rendering on a GPU) while learning stays on the CPU.
    """
    if CUDA_ENVVAR not in os.environ:
        if getattr(cfg, "device", "gpu") == "cpu" and not getattr(cfg, "actor_worker_gpus", None):
            gpus: list[int] = []
        else:
            gpus = get_gpus_without_triggering_pytorch_cuda_initialization(os.environ)
        os.environ[CUDA_ENVVAR] = ",".join(str(gpu) for gpu in gpus)
    log.info("Environment var %s is %r", CUDA_ENVVAR, os.environ[CUDA_ENVVAR])
