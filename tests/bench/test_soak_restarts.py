"""The churn soak script (bench/soak_restarts.py): its measuring and summary code (fast), and a short real soak of
3 restarts that must find no leak (slow: every restart starts a process that imports torch)."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("soak_restarts", os.path.join(REPO_ROOT, "bench", "soak_restarts.py"))
soak = importlib.util.module_from_spec(_spec)
sys.modules["soak_restarts"] = soak
_spec.loader.exec_module(soak)


def test_rss_slope_is_mb_per_10_minutes():
    times = [0.0, 60.0, 120.0, 180.0]
    assert soak.rss_slope_mb_per_10min(times, [100.0, 101.0, 102.0, 103.0]) == pytest.approx(10.0)
    assert soak.rss_slope_mb_per_10min(times, [100.0, 99.0, 101.0, 100.0]) == pytest.approx(2.0)
    assert soak.rss_slope_mb_per_10min(times, [50.0] * 4) == 0.0
    assert soak.rss_slope_mb_per_10min([5.0], [1.0]) == 0.0
    assert soak.rss_slope_mb_per_10min([5.0, 5.0], [1.0, 2.0]) == 0.0


def test_shm_mappings_are_counted_once_per_file_and_named_entries_told_apart():
    maps = "\n".join(
        [
            "7f0000000000-7f0000001000 rw-s 00000000 00:1a 101                        /dev/shm/sem.mp-abc",
            "7f0000002000-7f0000012000 rw-s 00000000 00:1a 102                        /dev/shm/pym-7-x (deleted)",
            "7f0000012000-7f0000022000 rw-s 00010000 00:1a 102                        /dev/shm/pym-7-x (deleted)",
            "7f0000030000-7f0000031000 rw-s 00000000 00:1a 103                        /dev/shm/torch_1_2 (deleted)",
            "7f0000040000-7f0000041000 r-xp 00000000 08:01 104                        /usr/lib/libc.so.6",
            "7f0000050000-7f0000051000 rw-p 00000000 00:00 0",
        ]
    )
    found = soak.parse_shm_maps(maps)
    assert len(found) == 3
    assert sorted(found.values()) == [0x1000, 0x1000, 0x20000]
    assert soak.named_shm_of(list(found)) == {"sem.mp-abc"}


def test_leaks_are_counts_that_grew():
    base = {"procs": 6, "runner_fds": 70, "runner_threads": 5, "shm_entries": 2, "runner_shm_maps": 45}
    same = dict(base, runner_fds=69)
    assert soak.find_leaks(base, same) == {}
    grown = dict(base, runner_fds=73, shm_entries=3)
    assert soak.find_leaks(base, grown) == {"runner_fds": 3, "shm_entries": 1}


def test_kill_schedule_spreads_the_restarts_over_the_run():
    assert soak.kill_schedule(1800, 300, 20, None) == pytest.approx(72.0)
    assert soak.kill_schedule(60, 20, 20, None) == 15.0  # never faster than a restart can be
    assert soak.kill_schedule(1800, 300, 20, 40.0) == 40.0


def test_csv_has_the_fixed_columns_then_one_per_child(tmp_path):
    rows = [
        {"t_s": 0.0, "event": "baseline", "procs": 6, "rss_rollout_w0_mb": 230.0},
        {"t_s": 10.0, "event": "after_restart", "killed": "learner_p0", "procs": 6, "rss_learner_p0_mb": 300.0},
    ]
    path = tmp_path / "s.csv"
    soak.write_csv(str(path), rows)
    with open(path) as f:
        read = list(csv.DictReader(f))
    assert list(read[0])[: len(soak.CSV_KEYS)] == list(soak.CSV_KEYS)
    assert read[1]["killed"] == "learner_p0" and read[1]["rss_learner_p0_mb"] == "300.0"
    assert read[0]["rss_learner_p0_mb"] == ""


def test_table_lines_up():
    text = soak.format_table([("procs", 6, 6, 0), ("runner_fds", 71, 71, None)])
    lines = text.splitlines()
    assert lines[0].startswith("measure") and set(lines[1]) <= {"-", " "}
    assert lines[2].split() == ["procs", "6", "6", "0"] and lines[3].split() == ["runner_fds", "71", "71"]


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit):
        soak.parse_args(["--minutes=0"])
    assert "--minutes" in capsys.readouterr().err
    args = soak.parse_args(["--minutes=3"])
    assert args.warmup_s == 30.0 and args.restarts == 22


def test_the_run_command_allows_more_restarts_than_the_soak_makes():
    args = soak.parse_args(["--minutes=2", "--restarts=7", "--", "--num_envs_per_worker=4"])
    cmd = soak.run_command(args, "/tmp/x")
    assert "--max_restarts=12" in cmd and "--max_restarts_total=12" in cmd
    assert cmd[-1] == "--num_envs_per_worker=4" and "--train_for_seconds=720" in cmd


@pytest.mark.slow
def test_three_restarts_leak_nothing(tmp_path):
    """A 2-minute run with 3 rollout worker kills: no process, /dev/shm entry, fd or thread left over.

    Rollout workers only: killing the inference worker in this small configuration hung the run 3 times in 3 (the
    open inbox-mutex problem in docs/reliability.md), which is not what this test is about."""
    out = tmp_path / "out"
    code = soak.main(
        [
            "--minutes=2", "--restarts=3", "--kill_every_s=15", "--warmup_s=20", "--sample_every_s=5",
            f"--out={out}", f"--train_dir={tmp_path / 'td'}", "--roles=rollout_w1,rollout_w0",
            "--restart_timeout_s=120",
            "--rss_slope_limit_mb=1000",  # too short a run to fit a slope
            "--", "--num_envs_per_worker=4",
        ]
    )  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert code == 0, summary
    assert summary["restarts"] == 3 and summary["run_exit_code"] in soak.CLEAN_EXIT_CODES
    assert not summary["leaks_after_restarts"] and not summary["processes_left"]
    assert not summary["run_shm_entries_left"]
    assert any(name.startswith("sem.mp-") for name in summary["run_shm_names_seen"])
