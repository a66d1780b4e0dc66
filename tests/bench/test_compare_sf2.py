"""bench/compare_sf2.py without Sample Factory 2: its log parsing, ratios and medians, argument checks, and whole
comparisons against stand-in trainers (small scripts that print the two lines the comparison reads)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import time

import pytest
from stand_in import stand_in_interpreter

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("compare_sf2", os.path.join(REPO_ROOT, "bench", "compare_sf2.py"))
compare_sf2 = importlib.util.module_from_spec(_spec)
sys.modules["compare_sf2"] = compare_sf2
_spec.loader.exec_module(compare_sf2)

LOG = """\
[\x1b[36m2025-01-01 10:00:01\x1b[0m] Fps is (10 sec: 900.0). Total num frames: 9000. Avg episode reward: [(0, '12.500')]
[2025-01-01 10:00:11] Fps is (10 sec: 1000.0). Total num frames: 19000. Avg episode reward: [(0, '-3.250')]
[2025-01-01 10:00:12] Collected {0: 20480}, FPS: 1024.5
"""


def _result(label: str, steps: int, fps: float, wall_s: float, reward: float = 1.0) -> object:
    return compare_sf2.RunResult(label, steps, fps, wall_s, reward, "ok")


def test_parse_log_reads_the_final_fps_line_and_the_last_reward_through_colour_codes():
    assert compare_sf2.parse_log(LOG) == (20480, 1024.5, -3.25)


def test_parse_log_of_a_run_that_never_finished():
    steps, fps, reward = compare_sf2.parse_log("Traceback (most recent call last):\n  ...\nKeyError: 'x'\n")
    assert (steps, fps) == (0, 0.0)
    assert math.isnan(reward)


def test_ratios_and_medians_over_the_pairs():
    summary = compare_sf2.WorkloadSummary("w")
    summary.pairs = [
        compare_sf2.Pair(0, _result("o0", 1000, 200.0, 10.0), _result("r0", 1000, 100.0, 20.0)),
        compare_sf2.Pair(1, _result("o1", 1000, 300.0, 10.0), _result("r1", 1000, 100.0, 10.0)),
        compare_sf2.Pair(2, _result("o2", 1000, 100.0, 10.0), _result("r2", 0, 0.0, 5.0)),  # reference failed
    ]
    assert [p.fps_ratio() for p in summary.pairs] == [2.0, 3.0, None]
    assert [p.steps_per_s_ratio() for p in summary.pairs] == [2.0, 1.0, None]
    medians = summary.medians()
    assert medians["fps_ratio"] == 2.5  # the failed pair is left out of the ratios
    assert medians["steps_per_s_ratio"] == 1.5
    assert medians["ours_fps"] == 200.0
    table = summary.table()
    assert "| reported FPS | 200.00 | 100.00 | 2.50 |" in table  # and out of the reference's own figures
    assert "median of 3 runs" in table


def test_medians_of_nothing_measured_print_as_not_available():
    summary = compare_sf2.WorkloadSummary("w")
    summary.pairs = [compare_sf2.Pair(0, _result("o", 0, 0.0, 1.0, math.nan), _result("r", 0, 0.0, 1.0, math.nan))]
    assert summary.medians()["fps_ratio"] is None
    assert "| reported FPS | n/a | n/a | n/a |" in summary.table()
    assert "| final average reward | n/a | n/a | |" in summary.table()


def test_last_scalar_reads_the_newest_value_of_a_tag_from_a_summary_folder(tmp_path):
    from tensorboardX import SummaryWriter

    folder = tmp_path / ".summary" / "0"
    writer = SummaryWriter(str(folder))
    for step, score in [(1000, 1.5), (2000, 2.25), (3000, 1.75)]:
        writer.add_scalar("policy_stats/avg_game_score", score, step)
    writer.add_scalar("0_aux/avg_reward", 0.4, 3000)
    writer.close()
    assert compare_sf2.last_scalar(str(folder), "policy_stats/avg_game_score") == 1.75
    assert math.isnan(compare_sf2.last_scalar(str(folder), "no/such_tag"))
    assert math.isnan(compare_sf2.last_scalar(str(tmp_path / "missing"), "policy_stats/avg_game_score"))


def test_whole_game_scores_get_a_row_only_where_a_workload_reads_them():
    summary = compare_sf2.WorkloadSummary("w")
    summary.pairs = [compare_sf2.Pair(0, _result("o", 100, 20.0, 10.0), _result("r", 100, 10.0, 20.0))]
    assert "whole-game score" not in summary.table()
    summary.pairs[0].ours.score, summary.pairs[0].reference.score = 2.25, 1.98
    assert "| final whole-game score | 2.25 | 1.98 | |" in summary.table()
    assert "game score 2.250" in summary.pairs[0].ours.describe()
    assert compare_sf2.WORKLOADS["atari_breakout_matched"].score_tags == compare_sf2.ATARI_GAME_SCORE_TAGS
    assert compare_sf2.WORKLOADS["doom_basic_matched"].score_tags is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cartpole_matched", "no_such_workload"], "unknown workload no_such_workload: choose from cartpole_matched"),
        (["--reps=0"], "--reps=0: at least 1 run"),
        (["--time_limit=-5"], "--time_limit=-5.0: must be positive"),
    ],
)
def test_bad_arguments_are_refused_with_the_cause(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        compare_sf2.parse_args(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_reps_come_from_the_environment_as_make_bench_passes_them(monkeypatch):
    monkeypatch.setenv("REPS", "3")
    assert compare_sf2.parse_args([]).reps == 3
    assert compare_sf2.parse_args([]).workloads == ["cartpole_matched"]


def test_every_workload_gives_both_systems_the_same_spelled_out_command():
    for name, workload in compare_sf2.WORKLOADS.items():
        ours = compare_sf2.training_command("ours-python", workload, "/s", f"ours_{name}_0", seed=3)
        ref = compare_sf2.training_command("ref-python", workload, "/s", f"ref_{name}_0", seed=3)
        assert ours[1:-2] == ref[1:-2], name  # all but the interpreter and the experiment name
        flags = [f.split("=")[0] for f in ours if f.startswith("--")]
        assert len(flags) == len(set(flags)), f"{name}: a flag given twice"
        assert "--seed=3" in ours
        for needed in ("--env", "--train_for_env_steps", "--num_workers", "--seed", "--device", "--rollout"):
            assert needed in flags, f"{name} leaves {needed} to the family defaults"
        assert workload.extra in compare_sf2.REFERENCE_EXTRAS


def test_the_reference_runs_without_this_repository_on_its_path(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", REPO_ROOT)
    assert "PYTHONPATH" not in compare_sf2.child_env(None)
    assert compare_sf2.child_env("/repo")["PYTHONPATH"] == "/repo"


FAKE_TRAINER = """\
import os, sys, time
args = dict(a.split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
mode = os.environ.get("FAKE_MODE", "finish")
if mode == "hang":
    # a worker in the same process group that would outlive its runner
    import subprocess
    ignore_term = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    sleeper = subprocess.Popen([sys.executable, "-c", ignore_term])
    with open(os.environ["FAKE_PIDFILE"], "w") as f:
        f.write(str(sleeper.pid))
    time.sleep(60)
steps = int(args["--train_for_env_steps"])
print(f"Avg episode reward: [(0, '{len(sys.argv)}.000')]")
print(f"Collected {{0: {steps}}}, FPS: {float(os.environ.get('FAKE_FPS', '100.0'))}")
print("cwd", os.getcwd(), "pythonpath", os.environ.get("PYTHONPATH"))
print("seed", args["--seed"])
"""


@pytest.fixture
def fake_python(tmp_path):
    """An 'interpreter' that runs the stand-in trainer whatever module it is asked for."""
    return stand_in_interpreter(tmp_path, FAKE_TRAINER)


def test_a_whole_comparison_against_stand_in_trainers(fake_python, tmp_path, capsys):
    scratch = tmp_path / "scratch"
    argv = ["cartpole_matched", "--reps=2", f"--ours_python={fake_python}", f"--ref_python={fake_python}"]
    assert compare_sf2.main([*argv, f"--scratch={scratch}"]) == 0
    out = capsys.readouterr().out
    assert out.count("ratio ours/reference: FPS 1.00") == 2
    assert "| reported FPS | 100.00 | 100.00 | 1.00 |" in out
    assert "machine at the end" in out
    results = json.loads((scratch / "results.json").read_text())
    runs = results["workloads"]["cartpole_matched"]["runs"]
    assert [r["ours"]["label"] for r in runs] == ["ours_cartpole_matched_0", "ours_cartpole_matched_1"]
    assert all(r["reference"]["steps"] == 200000 for r in runs)
    ref_log = (scratch / "ref_cartpole_matched_0.log").read_text()
    assert f"cwd {scratch / 'reference_cwd'} pythonpath None" in ref_log
    assert f"pythonpath {REPO_ROOT}" in (scratch / "ours_cartpole_matched_0.log").read_text()


@pytest.mark.parametrize(("extra", "seeds"), [([], ["5", "6", "7"]), (["--fixed_seed"], ["5", "5", "5"])])
def test_both_runs_of_a_pair_share_a_seed_and_each_pair_takes_the_next(fake_python, tmp_path, extra, seeds):
    scratch = tmp_path / "scratch"
    argv = ["cartpole_matched", "--reps=3", "--seed=5", f"--ours_python={fake_python}", f"--ref_python={fake_python}"]
    assert compare_sf2.main([*argv, *extra, f"--scratch={scratch}"]) == 0
    for system in ("ours", "ref"):
        logs = [(scratch / f"{system}_cartpole_matched_{rep}.log").read_text() for rep in range(3)]
        assert [log.split("seed ")[-1].split()[0] for log in logs] == seeds
    results = json.loads((scratch / "results.json").read_text())
    assert results["workloads"]["cartpole_matched"]["seeds"] == [int(seed) for seed in seeds]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has ended; only its parent can reap it
    except FileNotFoundError:
        return True


def test_a_run_past_its_time_limit_is_ended_with_its_whole_process_group(fake_python, tmp_path, monkeypatch):
    pidfile = tmp_path / "sleeper.pid"
    monkeypatch.setenv("FAKE_MODE", "hang")
    monkeypatch.setenv("FAKE_PIDFILE", str(pidfile))
    workload = compare_sf2.WORKLOADS["cartpole_matched"]
    command = compare_sf2.training_command(fake_python, workload, str(tmp_path), "hang")
    started = time.monotonic()
    result = compare_sf2.run_one("hang", command, str(tmp_path), dict(os.environ), str(tmp_path), limit_s=2.0)
    assert time.monotonic() - started < 30
    assert (result.status, result.steps) == ("time limit", 0)
    assert compare_sf2.CURRENT_RUN.process is None
    sleeper = int(pidfile.read_text())
    deadline = time.monotonic() + 10  # SIGKILL has been sent; the kernel ends the process within moments
    while not _gone(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(sleeper), "the run's worker outlived the time limit"


def test_a_run_without_its_fps_line_makes_the_comparison_fail(fake_python, tmp_path, monkeypatch, capsys):
    broken = tmp_path / "broken_python"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: no module named sf_examples'\nexit 1\n")
    broken.chmod(0o755)
    argv = ["cartpole_matched", "--reps=1", f"--ours_python={fake_python}", f"--ref_python={broken}"]
    assert compare_sf2.main([*argv, f"--scratch={tmp_path / 's'}"]) == 1
    out = capsys.readouterr().out
    assert "[exit 1]" in out
    assert "FPS n/a" in out


def test_list_prints_every_workload_command(capsys):
    assert compare_sf2.main(["--list"]) == 0
    out = capsys.readouterr().out
    for name, workload in compare_sf2.WORKLOADS.items():
        assert f"{name}: python -m {workload.module} --env=" in out


def test_installed_checks_pinned_versions_through_metadata():
    import importlib.metadata

    version = importlib.metadata.version("pytest")
    assert compare_sf2._installed(sys.executable, "pytest", f"pytest=={version}")
    assert not compare_sf2._installed(sys.executable, "pytest==0.0.1")  # another version: reinstall
    assert not compare_sf2._installed(sys.executable, "no-such-distribution-here")
