"""SF2's timing names: ``AvgTime``, ``TimingContext``, ``TimingTreeNode`` and the process's global profiler."""

from __future__ import annotations

import pytest

from sample_factory.utils import timing as timing_module
from sample_factory.utils.timing import (
    AvgTime,
    Timing,
    TimingContext,
    TimingTreeNode,
    global_profiler,
    init_global_profiler,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_avg_time_keeps_the_mean_of_a_window() -> None:
    avg = AvgTime(num_values_to_avg=2)
    assert float(avg) == 0.0
    assert avg.add(1.0) == 1.0 and avg.add(3.0) == 2.0 and avg.add(5.0) == 4.0  # 1.0 dropped
    assert list(avg.values) == [3.0, 5.0] and str(avg) == "4.0000"
    with pytest.raises(ValueError, match="at least 1"):
        AvgTime(0)


def test_timing_context_picks_the_measurement() -> None:
    clock = FakeClock()
    t = Timing("T", clock=clock)
    for duration in (1.0, 2.0):
        with TimingContext(t, "acc", additive=True):
            clock.now += duration
    for duration in (1.0, 2.0, 6.0):
        with TimingContext(t, "avg", average=2):
            clock.now += duration
    for duration in (1.0, 0.5):
        with TimingContext(t, "last"):
            clock.now += duration
    assert (t["acc"], t["avg"], t["last"]) == (3.0, 4.0, 0.5)
    assert t.tree_str() == "acc: 3.0000"  # only additive blocks form the tree
    with pytest.raises(ValueError, match="not both"):
        TimingContext(t, "x", additive=True, average=3)


def test_timing_tree_nodes_hold_the_tree() -> None:
    clock = FakeClock()
    t = Timing("T", clock=clock)
    with t.add_time("outer"), t.add_time("inner"):
        clock.now += 2.0
    outer = t.root.children["outer"]
    assert isinstance(outer, TimingTreeNode) and outer.seconds == 2.0
    assert outer.children["inner"].seconds == 2.0
    detached = TimingTreeNode()
    assert detached.key == "" and detached.seconds == 0.0 and detached.children == {} and detached.context is None


def test_global_profiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing_module, "_global_profiler", None)
    assert global_profiler() is None
    t = Timing("global")
    assert init_global_profiler(t) is t and global_profiler() is t
    with pytest.raises(TypeError, match="takes a Timing"):
        init_global_profiler("name")
