"""The learners of one policy across the ranks: their process group and collectives, and what a failed one means.

Every collective is bounded by ``--distributed_timeout`` (the process group's timeout): a rank whose batch is late by
more than that, or that died, makes the waiting ranks fail instead of waiting for ever. The error then says which
ranks are at fault, from two marks in the store: the training round each rank last entered (a rank behind the others
is a straggler) and the runners' heartbeat counters (a rank whose counter stopped is dead or hung).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from sample_factory.utils.distributed import RankInfo, beat_count, has_left

# how long a failed collective watches the heartbeats to tell dead ranks from live ones (runners beat every second)
DIAGNOSIS_WATCH_S = 3.0


class RankLostError(RuntimeError):
    """A collective with the other ranks failed or timed out; the message names the ranks at fault when it can."""


class RankGroup:
    """One policy's learners on every rank (``policy_id``'s process group over the run's store).

    Attributes ``rank`` and ``world_size``; ``device`` is where the collectives' tensors live (the learner's).
    """

    def __init__(
        self, info: RankInfo, store: dist.Store, name: str, backend: str, timeout_s: float, device: torch.device
    ) -> None:
        self.info = info
        self.rank, self.world_size = info.rank, info.world_size
        self.store = store
        self.name = name
        self.backend = backend
        self.timeout_s = timeout_s
        self.device = device
        if backend == "nccl":
            torch.cuda.set_device(device)
        try:
            dist.init_process_group(
                backend,
                store=dist.PrefixStore(f"{name}/group", store),
                rank=self.rank,
                world_size=self.world_size,
                timeout=timedelta(seconds=timeout_s),
            )
        except Exception as exc:
            raise RankLostError(self._diagnose(f"forming the {name} process group ({backend})", exc)) from exc

    def all_reduce_sum_(self, tensor: Tensor, what: str | Callable[[], str]) -> None:
        """Sum ``tensor`` over the ranks, in place; ``what`` names the collective in an error (a callable is called
        only then: a per-step name is not formatted on every step)."""
        try:
            dist.all_reduce(tensor)
        except Exception as exc:
            raise RankLostError(self._diagnose(what, exc)) from exc

    def all_reduce_mean_(self, tensor: Tensor, what: str | Callable[[], str]) -> None:
        """Average ``tensor`` over the ranks, in place: the same bits on every rank (one sum, one division)."""
        self.all_reduce_sum_(tensor, what)
        tensor.div_(self.world_size)

    def broadcast_object(self, obj: Any, what: str) -> Any:
        """Rank 0's ``obj`` on every rank (pickled: plain tensors, dicts and numbers; other ranks pass None)."""
        holder = [obj]
        device = self.device if self.backend == "nccl" else None
        try:
            dist.broadcast_object_list(holder, src=0, device=device)
        except Exception as exc:
            raise RankLostError(self._diagnose(what, exc)) from exc
        return holder[0]

    def mark_round(self, index: int) -> None:
        """Record in the store that this rank entered training round ``index`` (read when a collective fails)."""
        self.store.set(self._round_key(self.rank), str(index))

    # ---------------------------------------------------------------- what a failure means
    def _round_key(self, rank: int) -> str:
        return f"{self.name}/round/{rank}"

    def _diagnose(self, what: str | Callable[[], str], exc: BaseException) -> str:
        what = what if isinstance(what, str) else what()
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        head = f"{self.info}: {what} with the other ranks failed: {first_line}."
        try:
            findings = self._findings()
        except Exception as store_error:  # the store itself is gone: it lives on rank 0's machine
            findings = [f"The ranks' store on rank 0's machine is unreachable too ({store_error}): rank 0 is gone."]
        return " ".join([head, *findings])

    def _findings(self) -> list[str]:
        others = [r for r in range(self.world_size) if r != self.rank]
        beats = {r: beat_count(self.store, r) for r in others}
        time.sleep(DIAGNOSIS_WATCH_S)
        silent = [r for r in others if beat_count(self.store, r) == beats[r] and not has_left(self.store, r)]
        findings = []
        if silent:
            findings.append(
                f"Rank(s) {_listed(silent)} sent no heartbeat for {DIAGNOSIS_WATCH_S:g} s: dead, unreachable or hung "
                "(see their logs, sf_log_rank<N>.txt)."
            )
        rounds = {r: self._round_of(r) for r in range(self.world_size)}
        behind = [r for r in others if r not in silent and rounds[r] < rounds[self.rank]]
        if behind:
            findings.append(
                f"Rank(s) {_listed(behind)} had not reached training round {rounds[self.rank]} "
                f"(at {', '.join(str(rounds[r]) for r in behind)}): a rank whose batch is later than "
                f"--distributed_timeout={self.timeout_s:g} s stops the run; raise it for slow envs."
            )
        if not findings:
            findings.append("Every other rank is alive and at the same training round (see their logs).")
        return findings

    def _round_of(self, rank: int) -> int:
        key = self._round_key(rank)
        return int(self.store.get(key).decode()) if self.store.check([key]) else -1


def _listed(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in ranks)
