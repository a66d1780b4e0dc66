"""Which GPUs a process may use, and which device each policy's learner and inference workers compute on.

This module is the one place where devices are chosen; the runner, the learner, the inference workers and the
evaluation scripts all ask it.

Two decisions, taken at two moments:

- **Which GPUs a process sees** (``CUDA_VISIBLE_DEVICES``), before anything initialises CUDA. CUDA reads the
  variable once, at the first CUDA call in a process, so each worker must set it before touching ``torch.cuda``.
  That is why GPUs are counted here with ``nvidia-smi`` or read from the variable rather than through torch. The
  runner pins one list for every child (:func:`set_global_cuda_envvars`); rollout worker processes then narrow it
  to one GPU each with ``--actor_worker_gpus`` (:func:`set_gpus_for_process`).
- **Which of the visible devices a policy uses** (:func:`policy_device`). With ``--device=gpu`` policy ``p``
  learns *and* acts on visible GPU ``p % num_gpus``: its learner and all its ``--policy_workers_per_policy``
  inference workers share one device, so the weights the learner publishes can stay on that device
  (:func:`weights_buffer_device`) and reach the inference workers by device-to-device copies. Learner and
  inference processes keep the runner's list of visible GPUs, so a device index means the same GPU in all of them,
  which sharing CUDA tensors between processes relies on. A rollout worker's env that takes tensor actions
  (``--env_gpu_actions``) gets them on the first GPU its own process sees (:func:`env_actions_device`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence

import torch

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
    "cuda_envvars_for_policy",
    "choose_policy_device",
    "visible_cuda_device_count",
    "policy_device",
    "shared_weights_device",
    "weights_buffer_device",
    "env_actions_device",
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
        if cfg.device == "cpu" and not cfg.actor_worker_gpus:
            gpus: list[int] = []
        else:
            gpus = get_gpus_without_triggering_pytorch_cuda_initialization(os.environ)
        os.environ[CUDA_ENVVAR] = ",".join(str(gpu) for gpu in gpus)
    log.info("Environment var %s is %r", CUDA_ENVVAR, os.environ[CUDA_ENVVAR])


def cuda_envvars_for_policy(policy_id: int, process_type: str) -> list[int]:
    """Narrow this process's ``CUDA_VISIBLE_DEVICES`` to the one GPU of policy ``policy_id`` (round robin over the
    available GPUs, as :func:`policy_device` picks them); [] and an empty variable without GPUs.

    For a process that serves a single policy and should see only its GPU (``cuda:0`` there is the policy's GPU).
    The runner of this package does not narrow learner and inference processes, which keep the runner's list so
    that CUDA tensors shared between them name the same device everywhere; this is for scripts that run one
    policy's learner or inference on their own. Call it before anything initialises CUDA.
    """
    if policy_id < 0:
        raise ValueError(f"policy_id={policy_id} must be >= 0 (policies are numbered 0..--num_policies-1)")
    return set_gpus_for_process(policy_id, 1, process_type)


# ---- devices of the learner and inference workers ---------------------------------------------------------------


def choose_policy_device(device_flag: str, policy_id: int, num_gpus: int) -> torch.device:
    """The device policy ``policy_id`` learns and acts on, given ``--device`` and the number of visible GPUs.

    ``--device=gpu`` puts policy ``p`` on visible GPU ``p % num_gpus`` (several policies spread over the GPUs, one
    policy never spans two); the CPU when ``--device=cpu`` or no GPU is visible. Pure: no CUDA call.
    """
    if device_flag not in ("gpu", "cpu"):
        raise ValueError(f"--device={device_flag!r} is not a device choice: use --device=gpu or --device=cpu")
    if policy_id < 0:
        raise ValueError(f"policy_id={policy_id} must be >= 0 (policies are numbered 0..--num_policies-1)")
    if device_flag == "cpu" or num_gpus <= 0:
        return torch.device("cpu")
    return torch.device("cuda", policy_id % num_gpus)


def visible_cuda_device_count() -> int:
    """How many CUDA devices this process sees (0 without CUDA support or without a GPU).

    Asks torch, so it fixes ``CUDA_VISIBLE_DEVICES`` for this process: call it only in a process whose variable is
    already final (learner and inference processes inherit the runner's pinned list).
    """
    return torch.cuda.device_count() if cuda_available() else 0


def policy_device(cfg: Config, policy_id: int = 0) -> torch.device:
    """Where policy ``policy_id``'s learner and each of its inference workers compute (see the module docstring)."""
    num_gpus = visible_cuda_device_count() if cfg.device == "gpu" else 0
    if cfg.device == "gpu" and num_gpus == 0:
        log.warning("--device=gpu but CUDA is not available: policy %d learns and acts on the CPU", policy_id)
    return choose_policy_device(cfg.device, policy_id, num_gpus)


def shared_weights_device(writer: torch.device | str, readers: Iterable[torch.device | str]) -> torch.device:
    """Where a policy's published weights live: on the writer's CUDA device when every reader computes on exactly
    that device (publishing and reloading are then device-to-device copies), otherwise in host shared memory,
    which every device can read from.

    Devices are compared as given: ``cuda`` (the current device) and ``cuda:0`` count as different, which can only
    choose host memory, the choice that works everywhere.
    """
    writer = torch.device(writer)
    readers = [torch.device(reader) for reader in readers]
    if writer.type == "cuda" and readers and all(reader == writer for reader in readers):
        return writer
    return torch.device("cpu")


def weights_buffer_device(cfg: Config, policy_id: int) -> torch.device:
    """Where the runner allocates policy ``policy_id``'s published weights: its learner writes them and its inference
    workers read them, all on :func:`policy_device`."""
    device = policy_device(cfg, policy_id)
    return shared_weights_device(device, [device])


def env_actions_device(cfg: Config) -> torch.device | None:
    """Where a rollout worker hands tensor actions to its env with ``--env_gpu_actions=True``; None without the flag.

    A GPU simulator lives in the rollout worker's process, so this is the first GPU that process sees (the one
    ``--actor_worker_gpus`` gave it) with ``--device=gpu``, else the CPU. Asks no CUDA question.
    """
    if not cfg.env_gpu_actions:
        return None
    return torch.device("cuda" if cfg.device == "gpu" else "cpu")
