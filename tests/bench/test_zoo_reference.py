"""bench/zoo_reference.py (the Sample Factory 2.1.1 release on a zoo task) and its place on the zoo's page; the
release itself is not installed here: its command, log parsing, stopping and clean-up are tested on stand-ins."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

import zoo_reference  # noqa: E402
import zoo_report  # noqa: E402
from zoo_tasks import TASKS  # noqa: E402

ESC = "\x1b"
LOG = f"""\
{ESC}[36m[2026-11-29 00:02:21,541][11540] Fps is (10 sec: 2867.6). Total num frames: 28672.{ESC}[0m
{ESC}[36m[2026-11-29 00:02:21,541][11540] Avg episode reward: [(0, '-84.806')]{ESC}[0m
[2026-11-29 00:02:23,751][11567] Updated weights for policy 0, policy_version 80 (0.0004)
[2026-11-29 00:02:26,541][11540] Fps is (10 sec: 3000.0). Total num frames: 53248. Throughput: 0: 2900.1.
[2026-11-29 00:02:26,541][11540] Avg episode reward: [(0, '1.5e-02')]
"""


def test_the_release_gets_the_zoo_command_without_this_package_s_own_flags():
    command = zoo_reference.reference_command("py", TASKS["mujoco_swimmer"], "/runs", "sf2_x", 3)
    assert command[:3] == ["py", "-m", "sf_examples.mujoco.train_mujoco"]
    assert "--env=mujoco_swimmer" in command and "--seed=3" in command and "--train_for_env_steps=10000000" in command
    assert not any(flag.startswith("--mujoco_version") for flag in command)
    assert zoo_reference.family(TASKS["doom_basic"]) == "vizdoom"


def test_the_curve_is_read_from_the_console_summaries():
    assert zoo_reference.parse_curve(LOG) == [(28672, -84.806), (53248, 0.015)]
    assert zoo_reference.parse_curve("Avg episode reward: [(0, '3.0')]") == []  # no frame count before it
    thinned = zoo_reference.thin([(i, float(i)) for i in range(1000)], 150)
    assert len(thinned) == 150 and thinned[0] == (0, 0.0) and thinned[-1] == (999, 999.0)


def test_a_run_is_stopped_at_its_step_limit_with_its_whole_process_group(tmp_path, monkeypatch):
    """A stand-in 'release' prints summaries and starts a child; at the limit both are stopped."""
    script = tmp_path / "release.py"
    script.write_text(
        textwrap.dedent(
            """
            import subprocess, sys, time
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            frames = 0
            while True:
                frames += 1000
                print(f"Total num frames: {frames}.", flush=True)
                print(f"Avg episode reward: [(0, '{frames / 1000:.1f}')]", flush=True)
                time.sleep(0.05)
            """
        )
    )
    monkeypatch.setattr(zoo_reference, "POLL_S", 0.2)
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(zoo_reference, "SHM", shm)
    curve, _ = zoo_reference.run_reference([sys.executable, str(script)], tmp_path / "run.log", stop_at=5000)
    assert curve[-1][0] >= 5000 and curve[0] == (1000, 1.0)
    leftover = subprocess.run(["pgrep", "-f", "time.sleep(600)"], capture_output=True, text=True).stdout.split()
    assert not leftover


def test_only_new_unmapped_shared_memory_files_are_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(zoo_reference, "SHM", tmp_path)
    for name in ("old", "new_in_use", "new_left_over"):
        (tmp_path / name).write_bytes(b"x")
    monkeypatch.setattr(zoo_reference, "_mapped_shm", lambda: {"new_in_use"})
    assert zoo_reference.remove_leftover_shm({"old"}) == ["new_left_over"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new_in_use", "old"]


def _zoo(seed: int, curve: list[list[float]]) -> dict:
    return {
        "kind": "zoo", "workload": "mujoco_reacher", "command": "x --mujoco_version=v4", "commit": "c",
        "date": "2026-01-02T00:00:00", "machine": {"cores": 2, "gpu": "none"},
        "figures": {"seed": seed, "score_mean": -6.0, "score_std": 1.0, "best_checkpoint_score_mean": -5.0,
                    "env_steps": 10_000_000, "complete": True, "train_wall_s": 600.0, "curve": curve},
    }  # fmt: skip


def _reference(seed: int, curve: list[list[float]]) -> dict:
    return {
        "kind": "zoo_reference", "workload": "mujoco_reacher", "command": "sf2", "commit": "r",
        "date": "2026-01-03T00:00:00", "figures": {"seed": seed, "env_steps": curve[-1][0], "curve": curve},
    }  # fmt: skip


def test_the_page_sets_the_release_against_the_zoo_run_over_the_same_steps():
    ours = _zoo(1, [[1_000_000, 10.0, -9.0], [2_000_000, 20.0, -6.0], [3_000_000, 30.0, -5.0], [9e6, 90.0, -1.0]])
    theirs = _reference(1, [[1_000_000, -12.0], [2_100_000, -8.0], [3_000_000, -7.0]])
    table = zoo_report.reference_table([ours, theirs])
    # the last third of the release's 3M steps: 2M-3M; ours -5.5 (points at 2M and 3M), the release -7.5
    assert "| mujoco_reacher | 1 | 2.0M-3.0M | -7.50 | -5.50 | 2.00 | n/a | n/a | 2026-01-03, `r` |" in table
    svg = zoo_report.plots([ours, theirs])["docs/img/zoo/mujoco_reacher.svg"]
    assert "Sample Factory 2.1.1, seed 1" in svg and svg.count("<polyline") == 2
    assert zoo_report.reference_table([ours]) == "None yet."


def test_the_page_sets_the_two_final_policies_side_by_side_only_at_the_same_budget():
    ours = _zoo(1, [[2_000_000, 20.0, -6.0], [10_000_000, 90.0, -5.0]])
    stopped = _reference(1, [[2_000_000, -8.0], [3_000_000, -7.0]])
    stopped["figures"].update(budget=10_000_000, stop_at=3_000_000, score_mean=-7.25, score_std=0.5, episodes=10)
    assert "| -7.50 | -6.00 | 1.50 | -7.2 ± 0.5 | n/a |" in zoo_report.reference_table([ours, stopped])
    whole = _reference(1, [[2_000_000, -8.0], [9_981_952, -7.0]])  # its last summary a little before the budget
    whole["figures"].update(budget=10_000_000, stop_at=10_000_000, score_mean=-7.25, score_std=0.5, episodes=10)
    assert "| -7.2 ± 0.5 | -6.0 ± 1.0; best checkpoint -5.0 |" in zoo_report.reference_table([ours, whole])
    whole["figures"]["best_checkpoint_score_mean"] = -6.5
    assert "| -7.2 ± 0.5; best checkpoint -6.5 |" in zoo_report.reference_table([ours, whole])


def test_the_release_s_evaluation_is_read_from_its_running_means():
    log = "".join(
        f"{ESC}[37m[2026-11-29 11:38:19,300][1] Avg episode reward: {mean}, avg true_objective: {mean}{ESC}[0m\n"
        f"[2026-11-29 11:38:19,300][1] Num frames {i}000...\n"
        for i, mean in enumerate((10.0, 15.0, 20.0), start=1)
    )
    assert zoo_reference.parse_eval_rewards(log) == [10.0, 20.0, 30.0]  # the k-th reward: k*mean_k - (k-1)*mean_k-1
    assert zoo_reference.parse_eval_rewards("Avg episode reward: [(0, '3.0')]") == []  # a training summary is not one
    command = zoo_reference.enjoy_command("py", TASKS["mujoco_swimmer"], "/runs", "sf2_x", 10)
    assert command[:3] == ["py", "-m", "sf_examples.mujoco.enjoy_mujoco"]
    assert (
        "--no_render" in command and "--max_num_episodes=10" in command and "--load_checkpoint_kind=latest" in command
    )
    best = zoo_reference.enjoy_command("py", TASKS["mujoco_swimmer"], "/runs", "sf2_x", 10, "best")
    assert best[-1] == "--load_checkpoint_kind=best"


def test_an_evaluation_of_a_trained_run_alone_keeps_its_curve_and_adds_the_score(tmp_path, monkeypatch):
    """--eval_only: the curve comes from the run's log, the score from a stand-in enjoy script, which sees the
    weights-only override that the release's checkpoints need under torch >= 2.6."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "sf2_mujoco_reacher_s4.log").write_text(LOG)
    enjoy = tmp_path / "enjoy.py"
    enjoy.write_text(
        textwrap.dedent(
            """
            import os
            if os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD") == "1":
                for mean in (-4.0, -5.0):
                    print(f"Avg episode reward: {mean}, avg true_objective: {mean}", flush=True)
            """
        )
    )
    monkeypatch.setattr(zoo_reference.compare_sf2, "ensure_reference", lambda *args: sys.executable)
    monkeypatch.setattr(zoo_reference, "enjoy_command", lambda *args: [sys.executable, str(enjoy)])
    argv = ["mujoco_reacher", "--seed=4", "--eval_only", f"--train_dir={runs}", f"--results_dir={tmp_path}"]
    assert zoo_reference.main(argv) == 0
    (record,) = zoo_reference.records.load("zoo_reference", tmp_path)
    figures = record["figures"]
    assert figures["curve"] == [[28672, -84.806], [53248, 0.015]] and figures["wall_s"] is None
    assert figures["episodes"] == 2 and figures["score_mean"] == -5.0 and figures["score_std"] == 1.0
    assert figures["best_checkpoint_score_mean"] == -5.0  # the stand-in plays the same for either checkpoint
