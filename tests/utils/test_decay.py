"""``LinearDecay``: piecewise-linear interpolation between milestones, held flat outside them, optional steps."""

from __future__ import annotations

import pytest

from sample_factory.utils.decay import LinearDecay


def test_interpolates_and_holds_the_ends() -> None:
    decay = LinearDecay([(0, 3e-4), (10_000, 0.0)])
    assert decay.at(-5) == 3e-4 and decay.at(0) == 3e-4
    assert decay.at(2_500) == pytest.approx(2.25e-4)
    assert decay.at(10_000) == 0.0 and decay.at(1e9) == 0.0


def test_several_segments_rising_and_falling() -> None:
    schedule = LinearDecay(milestones=[(0, 0.0), (10, 1.0), (20, 0.5)])
    assert [schedule(x) for x in (5, 10, 15, 25)] == pytest.approx([0.5, 1.0, 0.75, 0.5])


def test_staircase_rounds_down_to_steps() -> None:
    bots = LinearDecay([(0, 1), (100, 8)], staircase=1)
    assert [bots.at(x) for x in (0, 14, 15, 50, 99, 100, 200)] == [1, 1, 2, 4, 7, 8, 8]
    coarse = LinearDecay([(0, 0.0), (1, 1.0)], staircase=0.25)
    assert coarse.at(0.6) == 0.5


def test_single_milestone_is_a_constant() -> None:
    assert LinearDecay([(5, 2.0)]).at(0) == LinearDecay([(5, 2.0)]).at(100) == 2.0


@pytest.mark.parametrize(
    ("milestones", "staircase", "match"),
    [([], None, "at least one"), ([(10, 1.0), (5, 0.0)], None, "increasing"), ([(0, 1.0)], 0, "positive")],
)
def test_bad_schedules_are_refused(milestones, staircase, match) -> None:
    with pytest.raises(ValueError, match=match):
        LinearDecay(milestones, staircase)
