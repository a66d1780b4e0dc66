"""What a rank's runner knows of the other ranks, through the store (a side channel to the learners' collectives).

- heartbeats: every second the watch adds one to its rank's counter; a rank whose counter stops moving for
  ``RANK_SILENCE_S`` (its process was killed, its machine went away, or it hangs) is reported, naming it. A rank that
  never beat is given ``--distributed_timeout`` to start;
- stop notices: a rank that stops on its own (interrupted, failed, target reached) first leaves a notice saying why,
  so the others stop too, with the same status and a message naming it;
- leaving: a rank that ends sets its ``left`` key, so its silence afterwards means nothing; rank 0, whose process
  serves the store, waits a moment for the others to leave before it ends.

The watch runs on its own thread, so a runner loop that is busy (serial mode trains on it) still beats; what it
finds goes to the runner's loop as a message (``on_rank_notice``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch.distributed as dist

from sample_factory.messaging.periodic_thread import PeriodicThread
from sample_factory.utils.distributed import RankInfo, add_beat, beat_count, has_left, mark_left
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus

BEAT_PERIOD_S = 1.0
# silence after which a rank that was beating counts as gone: long enough for a loaded machine, well under a minute
RANK_SILENCE_S = 20.0
STOPS_KEY = "stops"


@dataclass
class StopNotice:
    """Why ``rank`` stopped: ``status`` (an ExperimentStatus code), ``reason`` in words, ``done`` (target reached)."""

    rank: int
    status: int
    reason: str
    done: bool = False


def stop_key(rank: int) -> str:
    return f"stop/{rank}"


@dataclass(eq=False)
class RankWatch:
    """The runner's side channel to the other ranks (module docstring); ``report`` is called on the watch's thread.

    ``start_up_s`` is how long a rank that never beat has to start; ``silence_s`` how long one that did may go quiet.
    """

    info: RankInfo
    store: dist.Store
    report: Callable[[StopNotice], None]
    start_up_s: float
    silence_s: float = RANK_SILENCE_S
    period_s: float = BEAT_PERIOD_S

    def __post_init__(self) -> None:
        self.others = [r for r in range(self.info.world_size) if r != self.info.rank]
        self._last_count: dict[int, int] = {}
        self._changed_at: dict[int, float] = {}
        self._reported: set[int] = set()
        self._stops_seen = 0
        self._beats = PeriodicThread("rank-watch", self.period_s, self._beat)

    def start(self) -> None:
        now = time.monotonic()
        self._changed_at = {r: now for r in self.others}
        self._beats.start()

    def publish_stop(self, notice: StopNotice) -> None:
        """Tell the other ranks that this one stops, and why (before its learners leave the training rounds)."""
        try:
            self.store.set(stop_key(notice.rank), json.dumps(asdict(notice)))
            self.store.add(STOPS_KEY, 1)
        except Exception as exc:  # the store's host is gone: the other ranks learn it from the learners' rounds
            log.warning("%s could not publish its stop in the store: %s", self.info, exc)

    def notices(self) -> dict[int, StopNotice]:
        """Every stop notice left so far, by rank."""
        found = {}
        for r in self.others:
            if self.store.check([stop_key(r)]):
                found[r] = StopNotice(**json.loads(self.store.get(stop_key(r)).decode()))
        return found

    def leave(self, wait_for_others_s: float = 0.0) -> None:
        """This rank ends: stop beating, mark it left; wait up to ``wait_for_others_s`` for the other ranks that still
        beat to leave too (a dead rank, silent for a few beats, is not waited for)."""
        self._beats.stop(join=False)
        self._beats.join(timeout_s=2 * self.period_s)  # bounded: a store that hangs must not hang the exit
        try:
            mark_left(self.store, self.info.rank)
            self._wait_for_others(wait_for_others_s)
        except Exception as exc:  # rank 0 (the store's host) ended first: nothing left to tell
            log.debug("%s: the store is gone at exit (%s)", self.info, exc)

    def _wait_for_others(self, timeout_s: float) -> None:
        start = time.monotonic()
        counts = {r: beat_count(self.store, r) for r in self.others}
        moved_at = dict.fromkeys(self.others, start)
        while (now := time.monotonic()) < start + timeout_s:
            waiting = []
            for r in self.others:
                if has_left(self.store, r):
                    continue
                count = beat_count(self.store, r)
                if count != counts[r]:
                    counts[r], moved_at[r] = count, now
                if now - moved_at[r] < 3 * self.period_s:
                    waiting.append(r)
            if not waiting:
                return
            time.sleep(0.2)

    # ---------------------------------------------------------------- the thread
    def _beat(self) -> bool:
        """One period of the watch; True (the watch ends) when the store stops answering, reported unless this rank
        is leaving anyway."""
        try:
            self._tick()
        except Exception as exc:
            if not self._beats.stop_requested():
                host = f"{self.info.master_addr}:{self.info.master_port}"
                reason = f"is unreachable: the ranks' store it serves at {host} does not answer ({exc})"
                self.report(StopNotice(0, ExperimentStatus.FAILURE, reason))
            return True
        return False

    def _tick(self) -> None:
        add_beat(self.store, self.info.rank)
        now = time.monotonic()
        for r in self.others:
            count = beat_count(self.store, r)
            if count != self._last_count.get(r):
                self._last_count[r], self._changed_at[r] = count, now
                continue
            limit = self.silence_s if count > 0 else self.start_up_s
            if r not in self._reported and now - self._changed_at[r] > limit and not has_left(self.store, r):
                self._reported.add(r)
                verb = "sent no heartbeat" if count > 0 else "did not start"
                cause = "its processes died, its machine is unreachable, or it hangs"
                self.report(
                    StopNotice(r, ExperimentStatus.FAILURE, f"{verb} for {now - self._changed_at[r]:.0f} s: {cause}")
                )
        stops = int(self.store.add(STOPS_KEY, 0))
        if stops > self._stops_seen:
            self._stops_seen = stops
            for notice in self.notices().values():
                self.report(notice)
