"""The test harness's early stop (``sf_run.run_python_until``): the learning tests rely on it to stop a run with
Ctrl+C once it reached its reward, so it must interrupt at the right line, keep every line of output, keep the exit
code of a run that ends first, and fail (not hang) on a run that never ends."""

from __future__ import annotations

import pytest
import sf_run

# prints a reward line per step; Ctrl+C ends it with exit code 2, as the training runner does
_COUNTING = """
import signal, sys, time
signal.signal(signal.SIGINT, lambda *_: sys.exit(2))
for step in range({steps}):
    print(f"Avg episode reward: [(0, '{{step * 100.0:.3f}}')]", flush=True)
    time.sleep(0.05)
print("budget reached", flush=True)
"""


def test_stops_at_the_first_matching_line_with_ctrl_c() -> None:
    result = sf_run.run_python_until(["-c", _COUNTING.format(steps=10_000)], sf_run.reward_reached(450.0), timeout=60)
    assert result.returncode == 2, result.explain()
    assert result.best_reward() >= 500.0
    assert "Avg episode reward: [(0, '0.000')]" in result.output  # the lines read before the stop are kept
    assert "budget reached" not in result.output


def test_a_run_that_ends_first_keeps_its_exit_code() -> None:
    result = sf_run.run_python_until(["-c", _COUNTING.format(steps=3)], sf_run.reward_reached(450.0), timeout=60)
    assert result.returncode == 0, result.explain()
    assert result.best_reward() == 200.0
    assert "budget reached" in result.output


def test_a_run_over_its_time_limit_is_killed_and_fails() -> None:
    forever = "import time\nwhile True: time.sleep(0.05)"
    with pytest.raises(AssertionError, match="did not finish in 1.0 s"):
        sf_run.run_python_until(["-c", forever], sf_run.reward_reached(450.0), timeout=1.0)


def test_reward_reached_reads_policy_zero_reward_lines() -> None:
    reached = sf_run.reward_reached(450.0)
    assert reached("[2026-11-25 05:52:37,190][08812] Avg episode reward: [(0, '450.000')]")
    assert not reached("Avg episode reward: [(0, '449.990')]")
    assert not reached("Avg episode reward: [(0, 'nan')]")
    assert not reached("Fps is (10 sec: 500.0, 60 sec: 500.0)")
