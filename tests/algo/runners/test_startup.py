"""The start-up and shut-down lines: seconds from the command to the first collected frame, by phase."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest
from sf_run import run_module, short_run_args

from sample_factory.algo.runners import startup
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_start_of_the_process_is_read_to_a_clock_tick() -> None:
    """The count starts when the command's process was created: not up to a second earlier (the boot time of
    ``/proc/stat`` is whole seconds), nor after it."""
    code = "from sample_factory.algo.runners.startup import process_start_time; print(repr(process_start_time()))"
    before = time.time()
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    after_fork = time.time()
    out, _ = child.communicate(timeout=60)
    started = float(out)
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    assert before - 2 * tick - 0.01 <= started <= after_fork + 0.01, (before, started, after_fork)


def test_psutil_answers_where_the_boot_time_clock_disagrees_with_it(monkeypatch) -> None:
    """A process's start read against a boot-time clock shifted by a time namespace would be seconds off: psutil's
    answer, early by less than a second, is taken instead."""
    monkeypatch.setattr(startup, "_process_age", lambda: 3600.0)  # an hour: far from what psutil says
    expected = psutil.Process().create_time()
    assert startup.process_start_time() == pytest.approx(expected)


def test_a_real_run_logs_both_lines(tmp_path) -> None:
    result = run_module("sf_examples.train_gym_env", short_run_args(tmp_path, "CartPole-v1", 1024, num_workers=1))
    assert result.returncode == 0, result.explain()
    assert "Start-up: " in result.output and "from the command to the first collected frame" in result.output
    assert "Shut-down: " in result.output and "processes" in result.output
    assert os.path.isdir(tmp_path / "CartPole-v1")
