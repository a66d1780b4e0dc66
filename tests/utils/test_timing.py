"""Timing: the tree layout printed at exit, the flat report, timeit and time_avg, driven by a fake clock."""

from __future__ import annotations

import time

import pytest

from sample_factory.utils.timing import Timing


class FakeClock:
    """A clock that only moves when the test says so, so every duration is exact."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _learner_timing(clock: FakeClock) -> Timing:
    """wait (leaf) and train{bptt{forward_head, losses}, update, tail} with known durations."""
    timing = Timing("Learner", clock=clock)
    with timing.add_time("wait"):
        clock.advance(1.0)
    with timing.add_time("train"):
        with timing.add_time("bptt"):
            with timing.add_time("forward_head"):
                clock.advance(1.0)
            with timing.add_time("losses"):
                clock.advance(1.25)
            clock.advance(0.75)
        with timing.add_time("update"):
            clock.advance(1.5)
        with timing.add_time("tail"):
            clock.advance(0.25)
        clock.advance(0.25)
    return timing


def test_tree_str_three_levels(clock: FakeClock) -> None:
    timing = _learner_timing(clock)
    assert timing.tree_str().splitlines() == [
        "wait: 1.0000",
        "train: 5.0000",
        "  update: 1.5000, tail: 0.2500",
        "  bptt: 3.0000",
        "    forward_head: 1.0000, losses: 1.2500",
    ]


def test_tree_str_accumulates_repeated_entries_and_keeps_first_use_order(clock: FakeClock) -> None:
    timing = Timing("Rollout", clock=clock)
    for _ in range(3):
        with timing.add_time("env_step"):
            clock.advance(0.5)
            with timing.add_time("process_env_outputs"):
                clock.advance(0.125)
        with timing.add_time("enqueue"):
            clock.advance(0.25)
    with timing.add_time("aaa_last"):
        clock.advance(1.0)
    assert timing.tree_str().splitlines() == [
        "enqueue: 0.7500, aaa_last: 1.0000",
        "env_step: 1.8750",
        "  process_env_outputs: 0.3750",
    ]


def test_tree_str_empty_when_nothing_was_added(clock: FakeClock) -> None:
    timing = Timing(clock=clock)
    with timing.timeit("not_in_tree"):
        clock.advance(1.0)
    assert timing.tree_str() == ""


def test_same_key_under_two_parents_is_two_nodes_and_one_flat_sum(clock: FakeClock) -> None:
    timing = Timing("T", clock=clock)
    for parent, seconds in (("a", 1.0), ("b", 2.0)):
        with timing.add_time(parent):
            with timing.add_time("copy"):
                clock.advance(seconds)
    assert timing.tree_str().splitlines() == ["a: 1.0000", "  copy: 1.0000", "b: 2.0000", "  copy: 2.0000"]
    assert timing.copy == pytest.approx(3.0)


def test_flat_str_and_value_access(clock: FakeClock) -> None:
    timing = _learner_timing(clock)
    assert timing.flat_str() == (
        "Learner: wait: 1.0000, train: 5.0000, bptt: 3.0000, forward_head: 1.0000, "
        "losses: 1.2500, update: 1.5000, tail: 0.2500"
    )
    assert str(timing) == timing.flat_str()
    assert timing.bptt == pytest.approx(3.0)
    assert timing["losses"] == pytest.approx(1.25)
    assert "tail" in timing and "missing" not in timing
    assert timing.get("missing", -1.0) == -1.0


def test_unknown_key_raises(clock: FakeClock) -> None:
    timing = Timing("T", clock=clock)
    with pytest.raises(AttributeError, match="missing"):
        _ = timing.missing
    with pytest.raises(KeyError):
        _ = timing["missing"]


def test_exception_inside_block_still_counts_and_unwinds_nesting(clock: FakeClock) -> None:
    timing = Timing("T", clock=clock)
    with pytest.raises(RuntimeError), timing.add_time("outer"):
        clock.advance(2.0)
        raise RuntimeError("env crashed")
    with timing.add_time("after"):
        clock.advance(1.0)
    assert timing.outer == pytest.approx(2.0)
    # "after" must be top-level: the failed block must not stay open as its parent.
    assert timing.tree_str() == "outer: 2.0000, after: 1.0000"


def test_timeit_keeps_last_duration(clock: FakeClock) -> None:
    timing = Timing("T", clock=clock)
    for seconds in (1.0, 3.0, 0.5):
        with timing.timeit("step"):
            clock.advance(seconds)
    assert timing.step == pytest.approx(0.5)
    assert str(timing) == "T: step: 0.5000"


def test_time_avg_is_moving_average_over_window(clock: FakeClock) -> None:
    timing = Timing("T", clock=clock)
    durations = [1.0, 2.0, 3.0, 4.0, 5.0]
    averages = []
    for seconds in durations:
        with timing.time_avg("inference", average=3):
            clock.advance(seconds)
        averages.append(timing.inference)
    assert averages == pytest.approx([1.0, 1.5, 2.0, 3.0, 4.0])


def test_time_avg_rejects_empty_window() -> None:
    with pytest.raises(ValueError, match="average"):
        Timing().time_avg("x", average=0)


def test_reentering_a_key_reuses_its_context(clock: FakeClock) -> None:
    """Hot loops enter the same key millions of times: after the first use no new context is built."""
    timing = Timing("T", clock=clock)
    contexts = set()
    for _ in range(3):
        context = timing.add_time("step")
        contexts.add(id(context))
        with context:
            clock.advance(1.0)
    assert len(contexts) == 1
    assert timing.timeit("a") is timing.timeit("a")
    assert timing.step == pytest.approx(3.0)


def test_instances_track_nesting_independently(clock: FakeClock) -> None:
    first, second = Timing("A", clock=clock), Timing("B", clock=clock)
    with first.add_time("outer"):
        with second.add_time("other"):
            clock.advance(1.0)
    assert first.tree_str() == "outer: 1.0000"
    assert second.tree_str() == "other: 1.0000"


def test_default_clock_measures_real_time() -> None:
    timing = Timing()
    with timing.add_time("sleep"):
        time.sleep(0.02)
    assert 0.015 <= timing.sleep < 5.0
    assert str(timing).startswith("Profile: sleep: 0.0")
