"""Ranks of a distributed run: one experiment trained by several full pipelines that keep identical weights.

A run is distributed when its environment names a rank among several: ``RANK``, ``WORLD_SIZE`` (above 1),
``MASTER_ADDR`` and ``MASTER_PORT``, as ``torchrun`` sets them, as the launcher's Slurm jobs set them from
``SLURM_PROCID``/``SLURM_NTASKS``, or by hand; ``LOCAL_RANK`` picks the rank's GPU on its machine. Every process of a
rank reads them once (:func:`this_rank`); a process without them (or with ``WORLD_SIZE=1``) is a single-machine run
and nothing here is used.

The ranks meet in torch's key-value store (``TCPStore``) at ``MASTER_ADDR:MASTER_PORT``, hosted by rank 0's runner,
or by torchrun's agent when torchrun says so (``TORCHELASTIC_USE_AGENT_STORE=True``). Every key lives under the
launch attempt (``TORCHELASTIC_RESTART_COUNT``), so a job that torchrun restarts meets on a clean slate. Heartbeats,
stop notices and training-round markers are keys of that store; the learners' process groups meet there too
(:mod:`sample_factory.utils.rank_group`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

import torch

from sample_factory.utils.gpu_utils import CUDA_ENVVAR, get_gpus_without_triggering_pytorch_cuda_initialization
from sample_factory.utils.logging_setup import LOG_FILE_NAME, log

RANK_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
# a rank's envs and action sampling must differ from the other ranks' (identical experience would be wasted): rank r
# runs with --seed + r * SEED_STRIDE; an odd stride far from the seeds people sweep over
SEED_STRIDE = 1_000_003
BACKENDS = ("auto", "gloo", "nccl")


class RankSetupError(RuntimeError):
    """The environment or the store of a distributed run is unusable; the message names the variable or the fix."""


@dataclass(frozen=True)
class RankInfo:
    """Who this process works for in a distributed run (from the environment, see the module docstring)."""

    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    attempt: int = 0  # torchrun's restart count: 0 on the first launch
    agent_store: bool = False  # torchrun's agent hosts the store: rank 0's runner must not start one

    @property
    def is_main(self) -> bool:
        """Rank 0 writes the experiment's files: config.json, checkpoints, summaries, the done marker."""
        return self.rank == 0

    def __str__(self) -> str:
        return f"rank {self.rank} of {self.world_size} (local rank {self.local_rank})"


def _int_var(environ: Mapping[str, str], name: str, default: int | None = None) -> int:
    text = environ.get(name)
    if text is None or not text.strip():
        if default is None:
            raise RankSetupError(f"{name} is not set: a distributed run needs {', '.join(RANK_VARS)}")
        return default
    try:
        return int(text)
    except ValueError:
        raise RankSetupError(f"{name}={text!r} is not an integer") from None


def rank_info_from(environ: Mapping[str, str]) -> RankInfo | None:
    """The rank that ``environ`` describes, or None for a single-machine run (no variables, or ``WORLD_SIZE=1``).

    Raises RankSetupError naming the variable when they describe a distributed run incompletely or wrongly.
    """
    if not environ.get("WORLD_SIZE"):
        return None
    world_size = _int_var(environ, "WORLD_SIZE")
    if world_size <= 1:
        return None
    missing = [name for name in RANK_VARS if not environ.get(name)]
    if missing:
        raise RankSetupError(
            f"WORLD_SIZE={world_size} but {', '.join(missing)} not set: start ranks with torchrun, with the launcher's "
            "Slurm backend, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (and LOCAL_RANK) yourself"
        )
    rank, port = _int_var(environ, "RANK"), _int_var(environ, "MASTER_PORT")
    if not 0 <= rank < world_size:
        raise RankSetupError(f"RANK={rank} must lie in 0..WORLD_SIZE-1={world_size - 1}")
    if not 0 < port < 65536:
        raise RankSetupError(f"MASTER_PORT={port} is not a TCP port (1..65535)")
    return RankInfo(
        rank=rank,
        world_size=world_size,
        local_rank=_int_var(environ, "LOCAL_RANK", default=0),
        master_addr=environ["MASTER_ADDR"],
        master_port=port,
        attempt=_int_var(environ, "TORCHELASTIC_RESTART_COUNT", default=0),
        agent_store=environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True",
    )


@functools.cache
def this_rank() -> RankInfo | None:
    """This process's rank, read from ``os.environ`` once per process (children of a rank inherit the variables)."""
    return rank_info_from(os.environ)


def log_file_name(info: RankInfo | None) -> str:
    """``sf_log.txt`` for single-machine runs and rank 0; ``sf_log_rank{N}.txt`` for the other ranks."""
    if info is None or info.is_main:
        return LOG_FILE_NAME
    return f"sf_log_rank{info.rank}.txt"


def rank_seed(seed: int | None, info: RankInfo) -> int | None:
    """The ``--seed`` a rank runs with: rank 0's is the experiment's own (config.json), the others' are shifted."""
    return None if seed is None else seed + info.rank * SEED_STRIDE


def open_store(info: RankInfo, timeout_s: float, host: bool) -> torch.distributed.Store:
    """The run's store, under this launch attempt's prefix. ``host``: rank 0's runner serves it (unless torchrun's
    agent does); every other caller connects, retrying for up to ``timeout_s`` while the host starts."""
    import torch.distributed as dist

    serve = host and info.is_main and not info.agent_store
    try:
        store = dist.TCPStore(
            info.master_addr,
            info.master_port,
            None,
            serve,
            timedelta(seconds=timeout_s),
            wait_for_workers=False,
        )
    except (RuntimeError, OSError) as exc:
        verb = "serve" if serve else "reach"
        raise RankSetupError(
            f"{info}: cannot {verb} the ranks' store at MASTER_ADDR={info.master_addr} MASTER_PORT="
            f"{info.master_port} within --distributed_timeout={timeout_s:g} s ({exc}). Every rank must reach rank 0's "
            "machine at that address, and the port must be free there."
        ) from exc
    return dist.PrefixStore(f"sample_factory/attempt{info.attempt}", store)


def pin_rank_gpu(info: RankInfo, device: str) -> None:
    """``--device=gpu``: show this rank's processes only GPU ``LOCAL_RANK`` of the visible ones (before any CUDA call).

    The learner and inference workers of the rank then compute on its ``cuda:0``. More ranks than GPUs on a machine
    share them round-robin (logged); ``--device=cpu`` leaves ``CUDA_VISIBLE_DEVICES`` alone.
    """
    if device != "gpu":
        return
    gpus = get_gpus_without_triggering_pytorch_cuda_initialization(os.environ)
    if not gpus:
        return
    gpu = gpus[info.local_rank % len(gpus)]
    if info.local_rank >= len(gpus):
        log.warning("%s: %d GPUs visible on this machine, this rank shares GPU %d with another", info, len(gpus), gpu)
    os.environ[CUDA_ENVVAR] = str(gpu)
    log.info("%s computes on GPU %d (%s=%d)", info, gpu, CUDA_ENVVAR, gpu)


def resolve_backend(requested: str, device: torch.device) -> str:
    """``--distributed_backend``: auto is NCCL for a learner on a GPU, gloo on the CPU; NCCL needs a GPU learner."""
    if requested not in BACKENDS:
        raise RankSetupError(f"--distributed_backend={requested!r} is not one of {', '.join(BACKENDS)}")
    if requested == "auto":
        return "nccl" if device.type == "cuda" else "gloo"
    if requested == "nccl" and device.type != "cuda":
        raise RankSetupError(
            "--distributed_backend=nccl needs the learner on a GPU, but it runs on the CPU (--device=cpu, or no CUDA "
            "here): use --distributed_backend=gloo (or auto)"
        )
    return requested


# the store's heartbeat counters and stop marks, shared by the runners (heartbeats, stop notices) and the learners
# (their diagnosis of a failure)
def _beat_key(rank: int) -> str:
    return f"beat/{rank}"


def _left_key(rank: int) -> str:
    return f"left/{rank}"


def add_beat(store: torch.distributed.Store, rank: int) -> None:
    """One heartbeat of ``rank``: its counter goes up by one."""
    store.add(_beat_key(rank), 1)


def beat_count(store: torch.distributed.Store, rank: int) -> int:
    """How many heartbeats ``rank`` has sent (0 before its first); a counter that stops moving means a silent rank."""
    return int(store.add(_beat_key(rank), 0))


def mark_left(store: torch.distributed.Store, rank: int) -> None:
    """``rank`` ends on purpose: its silence from now on is no failure."""
    store.set(_left_key(rank), "1")


def has_left(store: torch.distributed.Store, rank: int) -> bool:
    return bool(store.check([_left_key(rank)]))
