"""bench/summary_compare.py: two groups of runs' TensorBoard summaries, averaged at fixed steps, side by side."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

import summary_compare  # noqa: E402


def _run(folder: Path, scalars: dict[str, list[tuple[int, float]]]) -> None:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(folder / ".summary" / "0"))
    for tag, points in scalars.items():
        for step, value in points:
            writer.add_scalar(tag, value, step)
    writer.close()


def test_values_are_interpolated_between_the_summaries_and_missing_outside_them():
    series = [(100.0, 1.0), (300.0, 3.0), (400.0, 0.0)]
    assert summary_compare.interpolate(series, 200) == pytest.approx(2.0)
    assert summary_compare.interpolate(series, 350) == pytest.approx(1.5)
    assert summary_compare.interpolate(series, 400) == 0.0
    assert summary_compare.interpolate(series, 50) is None and summary_compare.interpolate(series, 500) is None
    assert summary_compare.pick({"train/value": series}, "train/values|train/value") == series


def test_two_groups_are_averaged_over_their_runs_at_each_step(tmp_path, capsys):
    _run(tmp_path / "a_s1", {"train/values": [(0, 0.0), (1000, 10.0)]})
    _run(tmp_path / "a_s2", {"train/values": [(0, 2.0), (1000, 12.0)]})
    _run(tmp_path / "b_s1", {"train/value": [(0, 5.0), (2000, 5.0)]})
    code = summary_compare.main([
        "--group", f"ours={tmp_path}/a_s*", "--group", f"theirs={tmp_path}/b_s*",
        "--steps=500,1500", "--tags=train/values|train/value",
    ])  # fmt: skip
    assert code == 0
    table = capsys.readouterr().out
    # ours at 500: 5 and 7 -> 6 ± stdev(5, 7) / sqrt(2) = 1; at 1500 both runs have ended
    assert "| train/values|train/value | ours | 6 ± 1 (2) | n/a |" in table
    assert "| train/values|train/value | theirs | 5 ± nan (1) | 5 ± nan (1) |" in table
    assert math.isnan(summary_compare.mean_and_sem([1.0])[1])


def test_a_group_without_runs_or_a_malformed_one_is_refused(tmp_path, capsys):
    assert summary_compare.main(["--group", f"x={tmp_path}/none_*", "--steps=1"]) == 2
    assert "no run folder with summaries matches" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        summary_compare.main(["--group", "no-equals-sign", "--steps=1"])
