"""The runners' side channel between ranks: heartbeats, stop notices and leaving, over an in-process store.

The watches run with a beat of 20 ms and short limits, so what takes seconds in a run takes a fraction here.
"""

from __future__ import annotations

import threading
import time

import torch.distributed as dist

from sample_factory.algo.runners.rank_watch import RankWatch, StopNotice
from sample_factory.utils.distributed import RankInfo
from sample_factory.utils.misc import ExperimentStatus

PERIOD_S = 0.02
SILENCE_S = 0.3
START_UP_S = 0.6


class Reports:
    def __init__(self) -> None:
        self.notices: list[StopNotice] = []
        self.arrived = threading.Event()

    def __call__(self, notice: StopNotice) -> None:
        self.notices.append(notice)
        self.arrived.set()


def _watch(rank: int, store: dist.Store, reports: Reports, world: int = 2) -> RankWatch:
    info = RankInfo(rank, world, 0, "127.0.0.1", 1)
    return RankWatch(info, store, reports, START_UP_S, silence_s=SILENCE_S, period_s=PERIOD_S)


def _first_report(reports: Reports, timeout: float = 5.0) -> StopNotice:
    assert reports.arrived.wait(timeout), "nothing reported"
    return reports.notices[0]


def test_a_rank_that_stops_beating_is_reported_by_name() -> None:
    store, reports = dist.HashStore(), Reports()
    zero, one = _watch(0, store, reports), _watch(1, store, Reports())
    zero.start()
    one.start()
    time.sleep(5 * PERIOD_S)
    one._beats.stop(join=False)  # its thread ends as a killed process's would: no beat, no left key
    started = time.monotonic()
    notice = _first_report(reports)
    assert time.monotonic() - started >= SILENCE_S - 3 * PERIOD_S  # its last beat came at most a period earlier
    assert (notice.rank, notice.status) == (1, ExperimentStatus.FAILURE)
    assert notice.reason.startswith("sent no heartbeat for")
    zero.leave()


def test_a_rank_that_never_starts_is_reported_after_the_start_up_limit() -> None:
    store, reports = dist.HashStore(), Reports()
    zero = _watch(0, store, reports)
    zero.start()
    notice = _first_report(reports)
    assert notice.rank == 1 and notice.reason.startswith("did not start for")
    zero.leave()


def test_a_stop_notice_reaches_the_other_ranks_with_its_status_and_reason() -> None:
    store, reports = dist.HashStore(), Reports()
    zero, one = _watch(0, store, reports), _watch(1, store, Reports())
    zero.start()
    one.start()
    one.publish_stop(StopNotice(1, ExperimentStatus.INTERRUPTED, "was interrupted", done=False))
    notice = _first_report(reports)
    assert notice == StopNotice(1, ExperimentStatus.INTERRUPTED, "was interrupted", False)
    assert zero.notices() == {1: notice}
    one.leave()
    zero.leave()


def test_a_rank_that_left_is_not_reported_and_is_not_waited_for_once_gone() -> None:
    store, reports = dist.HashStore(), Reports()
    zero, one = _watch(0, store, reports), _watch(1, store, Reports())
    zero.start()
    one.start()
    time.sleep(5 * PERIOD_S)
    one.leave()
    time.sleep(2 * SILENCE_S)
    assert reports.notices == []
    started = time.monotonic()
    zero.leave(wait_for_others_s=5.0)  # rank 1 has left: no wait
    assert time.monotonic() - started < 1.0


def test_rank_zero_waits_for_a_live_rank_to_leave_but_not_for_a_dead_one() -> None:
    store = dist.HashStore()
    zero, one, two = (_watch(r, store, Reports(), world=3) for r in range(3))
    for watch in (zero, one, two):
        watch.start()
    time.sleep(5 * PERIOD_S)
    two._beats.stop(join=False)  # dead: stops beating without leaving
    threading.Timer(0.5, one.leave).start()  # alive: leaves half a second later
    started = time.monotonic()
    zero.leave(wait_for_others_s=5.0)
    waited = time.monotonic() - started
    assert 0.4 < waited < 2.0, waited
