"""bench/seed_spread.py (many short runs of a zoo task, here and in the Sample Factory 2.1.1 release) and its table on
the zoo's page; the runs themselves are stand-ins (the release is not installed in CI)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

import compare_sf2  # noqa: E402
import seed_spread  # noqa: E402
import zoo_reference  # noqa: E402
import zoo_report  # noqa: E402


def test_seeds_are_read_as_ranges_and_lists_in_order_without_repeats():
    assert seed_spread.parse_seeds("1-4") == [1, 2, 3, 4]
    assert seed_spread.parse_seeds("5,1-3,2,9") == [5, 1, 2, 3, 9]
    assert seed_spread.parse_seeds("7") == [7]


@pytest.mark.parametrize(
    ("text", "cause"), [("4-2", "runs backwards; write 2-4"), ("a", "is not a seed"), (",", "no seed")]
)
def test_a_bad_seed_list_names_what_is_wrong(text, cause):
    with pytest.raises(argparse.ArgumentTypeError, match=cause):
        seed_spread.parse_seeds(text)


def test_ours_starts_afresh_with_the_zoo_s_command_and_the_release_gets_its_own():
    ours = seed_spread.command_for("ours", "mujoco_halfcheetah", "/runs", 3, None)
    assert ours[1:3] == ["-m", "sf_examples.mujoco.train_mujoco"]
    assert "--restart_behavior=overwrite" in ours and "--restart_behavior=resume" not in ours
    assert "--seed=3" in ours and "--train_for_env_steps=10000000" in ours and "--mujoco_version=v4" in ours
    assert "--experiment=spread_ours_mujoco_halfcheetah_s3" in ours
    release = seed_spread.command_for("sf2_2.1.1", "mujoco_halfcheetah", "/runs", 3, "py")
    assert release[0] == "py" and "--experiment=spread_sf2_2.1.1_mujoco_halfcheetah_s3" in release
    assert not any(arg.startswith("--mujoco_version") for arg in release)


def test_bad_arguments_are_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit):
        seed_spread.parse_args(["mujoco_hopper", "--stop_at=1000", "--implementations=ours,sf3"])
    assert "sf3; choose from ours, sf2_2.1.1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        seed_spread.parse_args(["mujoco_hopper", "--stop_at=0"])
    with pytest.raises(SystemExit):
        seed_spread.parse_args(["doom_battle", "--stop_at=1000"])  # its map is not available here


def test_each_run_writes_a_record_and_a_run_without_summaries_fails_the_call(tmp_path, monkeypatch):
    """Both implementations run for each seed in turn; the release's run of seed 2 prints nothing."""
    calls = []

    def fake_run(command, log_path, stop_at):
        calls.append((command[0], next(a for a in command if a.startswith("--seed="))))
        if command[0] == "release-python" and "--seed=2" in command:
            return [], 1.0
        reward = 1000.0 if command[0] == "release-python" else 2000.0
        return [(stop_at // 2, reward / 2), (stop_at + 512, reward)], 60.0

    monkeypatch.setattr(zoo_reference, "run_reference", fake_run)
    monkeypatch.setattr(compare_sf2, "ensure_reference", lambda venv, torch, extras: "release-python")
    monkeypatch.setattr(seed_spread.records, "versions", lambda python=None: {"python": "3"})
    code = seed_spread.main(["mujoco_hopper", "--seeds=1-2", "--stop_at=4096", f"--train_dir={tmp_path / 'runs'}",
                             f"--results_dir={tmp_path}"])  # fmt: skip
    assert code == 1
    assert [python == "release-python" for python, _ in calls] == [False, True, False, True]
    written = [json.loads(line) for line in (tmp_path / "seed_spread.jsonl").read_text().splitlines()]
    assert [(r["figures"]["implementation"], r["figures"]["seed"]) for r in written] == [
        ("ours", 1), ("sf2_2.1.1", 1), ("ours", 2)
    ]  # fmt: skip
    assert written[0]["figures"]["reward"] == 2000.0 and written[0]["figures"]["env_steps"] == 4608
    assert "reference_versions" in written[1] and "reference_versions" not in written[0]


def _spread(implementation: str, seed: int, reward: float, date: str = "2026-12-09T00:00:00+00:00") -> dict:
    return {
        "kind": "seed_spread", "workload": "mujoco_halfcheetah", "commit": "c", "date": date,
        "figures": {"implementation": implementation, "seed": seed, "stop_at": 1_500_000, "reward": reward,
                    # read at the first summary at or past the stop: not the later one the run was stopped at
                    "curve": [[1_400_000, 0.0], [1_520_000, reward], [1_600_000, reward + 50.0]]},
    }  # fmt: skip


def test_the_page_lists_each_implementation_s_seeds_and_median_from_the_latest_runs():
    runs = [
        _spread("ours", 2, 3900.0), _spread("ours", 1, 1400.0), _spread("ours", 3, 1500.0),
        _spread("ours", 3, 1600.0, "2026-12-10T00:00:00+00:00"),  # a later run of the same seed replaces the first
        _spread("sf2_2.1.1", 1, 4100.0), _spread("sf2_2.1.1", 2, 1700.0),
        _spread("ours", 1, 1300.0, "2026-11-29T10:00:00+00:00"),  # before workers spread their envs: a group apart
    ]  # fmt: skip
    table = zoo_report.spread_table(runs)
    assert (
        "| mujoco_halfcheetah | 1,500,000 | ours | 3 | 1: 1,400, 2: 3,900, 3: 1,600 | 1,600 | 2026-12-10, `c` |"
        in table
    )
    assert "| ours, envs started together ‡ § | 1 | 1: 1,300 | 1,300 | 2026-11-29, `c` |" in table
    assert "| Sample Factory 2.1.1 | 2 | 1: 4,100, 2: 1,700 | 2,900 |" in table
    assert zoo_report.spread_table([]) == "None yet."
    assert zoo_report.reward_at_step([[10, 1.0], [20, 2.0]], 30) == 2.0  # a run that never got there: its last point
