"""Results as data: bench/records.py, the pages generated from the records (docs/gen_results.py) and the zoo runner
(bench/zoo.py), end to end on a tiny CartPole task."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


records = _load("records", REPO_ROOT / "bench" / "records.py")
zoo_tasks = _load("zoo_tasks", REPO_ROOT / "bench" / "zoo_tasks.py")
zoo = _load("zoo", REPO_ROOT / "bench" / "zoo.py")
gen_results = _load("gen_results", REPO_ROOT / "docs" / "gen_results.py")


def test_the_pages_are_what_the_records_give():
    """docs/benchmarks.md, docs/zoo.md and the README's figures sentence, regenerated, equal the committed files."""
    assert gen_results.main(["--check"]) == 0, "run `python docs/gen_results.py` and commit the pages"


def test_the_benchmarks_page_is_short_and_undated_prose():
    page = (REPO_ROOT / "docs" / "benchmarks.md").read_text()
    assert len(page.splitlines()) < 250
    headings = [line for line in page.splitlines() if line.startswith("#")]
    for word in ("night", "evening", "afternoon", "morning", "2026", "slower day"):
        assert not any(word in heading for heading in headings), headings


def test_a_record_carries_its_context_and_appends_to_its_kind(tmp_path):
    record = records.make_record("compare_sf2", "s1", "python bench/x.py", "cartpole_matched", {"fps_ratio": 2.0})
    for key in ("date", "commit", "machine", "versions", "load_average", "command"):
        assert record[key], key
    assert record["machine"]["cores"] >= 1 and "torch" in record["versions"]
    summary = records.make_record("compare_sf2_set", "s0", "c", "doom_basic_matched", {"pairs": 3})
    written = records.append([summary, record], tmp_path)
    assert written == [tmp_path / "compare_sf2.jsonl"]
    assert [r["set"] for r in records.load(results_dir=tmp_path)] == ["s0", "s1"]
    (tmp_path / "zoo.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match=r"zoo.jsonl:1"):
        records.load(results_dir=tmp_path)


def test_a_record_s_commit_is_dirty_for_changed_code_but_not_for_appended_records(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "zoo.jsonl").write_text("{}\n")
    (tmp_path / "train.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    commit = records.git_commit(tmp_path)
    assert commit and not commit.endswith("+dirty")
    (tmp_path / "bench" / "results" / "zoo.jsonl").write_text("{}\n{}\n")  # a run appended its record
    assert records.git_commit(tmp_path) == commit
    assert records.git_commit(tmp_path / "bench" / "results") == commit  # from any folder of the tree
    (tmp_path / "train.py").write_text("x = 2\n")
    assert records.git_commit(tmp_path) == commit + "+dirty"
    assert records.git_commit(tmp_path / "bench" / "results") == commit + "+dirty"  # from any folder of the tree


def _pair(set_id: str, workload: str, pair: int, ours_fps: float, ref_fps: float) -> dict:
    figures = {
        "pair": pair, "seed": pair + 1, "fps_ratio": ours_fps / ref_fps, "steps_per_s_ratio": ours_fps / ref_fps * 0.9,
        "ours": {"fps": ours_fps, "wall_s": 10.0, "reward": 1.0, "score": None},
        "reference": {"fps": ref_fps, "wall_s": 20.0, "reward": 0.5, "score": None},
    }  # fmt: skip
    return {"kind": "compare_sf2", "set": set_id, "date": "2026-01-02", "commit": "abc", "command": f"cmd {set_id}",
            "machine": {"cpu": "cpu", "cores": 2, "memory_gib": 4, "gpu": "none"}, "versions": {"python": "3.11"},
            "workload": workload, "figures": figures}  # fmt: skip


def test_the_latest_set_of_a_workload_is_current_and_older_sets_go_to_one_table():
    recs = [_pair("old", "w", i, 100 + i, 50) for i in range(3)] + [_pair("new", "w", i, 300, 100) for i in range(2)]
    current, older = gen_results.compare_sections(recs)
    assert "| w | 2026-01-02, `abc` | 2 | **3.00** | **2.70** |" in current
    assert "cmd new" in current and "cmd old" not in current
    assert "| 2026-01-02, `abc` | w | 3 | 2.02 |" in older  # median of 100/50, 101/50, 102/50


def test_compare_sf2_writes_one_record_per_pair():
    compare_sf2 = _load("compare_sf2_for_records", REPO_ROOT / "bench" / "compare_sf2.py")
    run = compare_sf2.RunResult("x", 1000, 100.0, 10.0, 1.5, "ok")
    ref = compare_sf2.RunResult("y", 1000, 50.0, 20.0, float("nan"), "ok")
    summary = compare_sf2.WorkloadSummary("cartpole_matched", [compare_sf2.Pair(0, run, ref, 7)])
    (made,) = compare_sf2.pair_records([summary], "python bench/compare_sf2.py", "set-1", {"sample-factory": "2.1.1"})
    assert made["kind"] == "compare_sf2" and made["workload"] == "cartpole_matched"
    assert made["figures"]["fps_ratio"] == 2.0 and made["figures"]["steps_per_s_ratio"] == 2.0
    assert made["figures"]["reference"]["reward"] is None  # nan is not JSON
    assert made["reference_versions"] == {"sample-factory": "2.1.1"}
    assert made["workload_command"].endswith("--seed=7")
    json.dumps(made)


def test_zoo_thresholds_and_curves():
    hopper = zoo_tasks.TASKS["mujoco_hopper"]
    assert hopper.threshold_90() == pytest.approx(2793.44 * 0.9)
    assert zoo_tasks.TASKS["mujoco_reacher"].threshold_90() == pytest.approx(-4.53 - 0.453)
    assert hopper.passes(2793.44 - 642.0) and not hopper.passes(2000.0)
    points = [(0, 1000.0, 1.0), (10, 1010.0, 2.0), (20, 5000.0, 3.0), (30, 5030.0, 4.0)]  # a pause at 20
    curve = zoo.training_seconds(points)
    assert [s for _, s, _ in curve] == [0.0, 10.0, 10.0, 40.0]
    assert zoo.first_reaching(curve, 3.5) == (30, 40.0)
    assert zoo.first_reaching(curve, 9.0) is None
    assert len(zoo.thin([(i, float(i), 0.0) for i in range(500)], 60)) == 60


def test_zoo_trains_evaluates_and_records_a_task(tmp_path, monkeypatch):
    task = zoo_tasks.ZooTask("CartPole-v1", "sf_examples.train_gym_env", 8192, 500.0, 0.0, "test", extra_flags=(
        "--num_workers=1", "--num_envs_per_worker=4", "--device=cpu", "--experiment_summaries_interval=1"))  # fmt: skip
    monkeypatch.setitem(zoo.TASKS, "cartpole_tiny", task)
    argv = ["cartpole_tiny", f"--train_dir={tmp_path / 'runs'}", f"--results_dir={tmp_path}", "--episodes=3"]
    assert zoo.main(argv) == 0
    (record,) = records.load("zoo", tmp_path)
    f = record["figures"]
    assert record["workload"] == "cartpole_tiny" and f["budget"] == 8192 and f["complete"]
    assert f["episodes"] == 3 and f["score_mean"] > 0 and f["train_wall_s"] > 0
    assert f["curve"] and f["env_steps"] >= 8192 - 1024
    assert f["passes"] is False  # 8k steps of CartPole are far from 500
    state = json.loads((tmp_path / "runs" / "zoo_cartpole_tiny_s1" / zoo.STATE_FILE).read_text())
    assert state["calls"] == 1


def test_zoo_stops_a_run_at_its_time_limit_and_records_it_as_partial(tmp_path, monkeypatch):
    task = zoo_tasks.ZooTask("CartPole-v1", "sf_examples.train_gym_env", 10**9, 500.0, 0.0, "test", extra_flags=(
        "--num_workers=1", "--num_envs_per_worker=4", "--device=cpu", "--experiment_summaries_interval=1"))  # fmt: skip
    monkeypatch.setitem(zoo.TASKS, "cartpole_endless", task)
    argv = ["cartpole_endless", f"--train_dir={tmp_path / 'runs'}", f"--results_dir={tmp_path}", "--episodes=2",
            "--max_hours=0.003"]  # fmt: skip
    assert zoo.main(argv) == 0
    (record,) = records.load("zoo", tmp_path)
    assert record["figures"]["complete"] is False and 0 < record["figures"]["env_steps"] < 10**9
    assert record["figures"]["episodes"] == 2
    assert any((tmp_path / "runs" / "zoo_cartpole_endless_s1" / "checkpoint_p0").glob("checkpoint_*.pth"))


def test_zoo_refuses_a_task_this_package_cannot_train_and_says_why(tmp_path, capsys):
    argv = ["doom_battle", f"--train_dir={tmp_path / 'runs'}", f"--results_dir={tmp_path}"]
    assert zoo.main(argv) == 2
    assert "doom_battle cannot be trained here: its map is Sample Factory 2's own" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() and not records.load("zoo", tmp_path)
