"""The start-up and shut-down lines: seconds from the command to the first collected frame, by phase."""

from __future__ import annotations

import os

from sf_run import run_module, short_run_args

from sample_factory.algo.runners.startup import RunTimeline


def test_start_up_line_splits_the_time_by_phase() -> None:
    timeline = RunTimeline(started_at=100.0)
    timeline.marks = {"imports": 102.0, "env_info": 102.5, "buffers": 102.6, "workers": 104.6}
    assert timeline.start_up_line() == (
        "Start-up: 4.6 s from the command to the first collected frame "
        "(imports and parsing 2.0, env info 0.5, buffers 0.1, workers 2.0)"
    )


def test_a_phase_is_marked_once_and_missing_phases_are_left_out() -> None:
    timeline = RunTimeline(started_at=0.0)
    timeline.marks = {"stop_requested": 10.0, "components_stopped": 10.5}
    timeline.mark("stop_requested")  # the first time counts
    assert timeline.marks["stop_requested"] == 10.0
    line = timeline.shut_down_line()
    assert line.startswith("Shut-down: ") and "(components 0.5" in line and "processes" not in line


def test_a_real_run_logs_both_lines(tmp_path) -> None:
    result = run_module("sf_examples.train_gym_env", short_run_args(tmp_path, "CartPole-v1", 1024, num_workers=1))
    assert result.returncode == 0, result.explain()
    assert "Start-up: " in result.output and "from the command to the first collected frame" in result.output
    assert "Shut-down: " in result.output and "processes" in result.output
    assert os.path.isdir(tmp_path / "CartPole-v1")
