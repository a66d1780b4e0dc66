"""The zoo's page (bench/zoo_report.py): which records are current, a row per seed, earlier records kept, the plots."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

import zoo_report  # noqa: E402
from zoo_tasks import TASKS  # noqa: E402

MUJOCO = "python -m sf_examples.mujoco.train_mujoco --env=mujoco_hopper --seed={seed}"


def _record(workload: str, seed: int, command: str, score: float, best: float | None = None, commit: str = "c1"):
    curve = [[0, 0.0, 10.0], [5_000_000, 300.0, score / 2], [10_000_000, 600.0, score]]
    figures = {
        "seed": seed, "score_mean": score, "score_std": 1.0, "best_checkpoint_score_mean": best,
        "env_steps": 10_000_000, "complete": True, "train_wall_s": 600.0, "time_to_90_s": None, "curve": curve,
    }  # fmt: skip
    return {
        "kind": "zoo", "workload": workload, "command": command.format(seed=seed), "commit": commit,
        "date": "2026-01-02T00:00:00+00:00", "machine": {"cores": 2, "gpu": "none"}, "figures": figures,
    }  # fmt: skip


def test_the_task_version_comes_from_the_command():
    hopper, doom = TASKS["mujoco_hopper"], TASKS["doom_basic"]
    assert zoo_report.task_variant(hopper, "x --mujoco_version=v4") == "v4"
    assert zoo_report.task_variant(hopper, "x --env=mujoco_hopper") == "v5"  # before the flag existed
    assert zoo_report.task_variant(doom, "x --env=doom_basic") == ""


def test_latest_current_record_of_each_seed_is_a_row_and_the_rest_stay_as_earlier_records():
    v5 = _record("mujoco_hopper", 1, MUJOCO, 2500.0, 3400.0, commit="old")
    first_v4 = _record("mujoco_hopper", 1, MUJOCO + " --mujoco_version=v4", 1000.0, commit="first")
    seed1 = _record("mujoco_hopper", 1, MUJOCO + " --mujoco_version=v4", 2300.0, 2900.0, commit="second")
    seed2 = _record("mujoco_hopper", 2, MUJOCO + " --mujoco_version=v4", 1500.0, 2200.0)
    current, earlier = zoo_report.split_records([v5, first_v4, seed2, seed1])
    assert current == {"mujoco_hopper": {1: seed1, 2: seed2}} and list(current["mujoco_hopper"]) == [1, 2]
    assert earlier == [v5, first_v4]

    table = zoo_report.zoo_table([v5, first_v4, seed2, seed1])
    hopper_rows = [line for line in table.splitlines() if line.startswith("| mujoco_hopper |")]
    assert len(hopper_rows) == 2
    assert "| 2300.00 ± 1.00 | 2,900.00 | yes / yes |" in hopper_rows[0]  # published 2793 ± 643: bar 2151
    assert "| 1500.00 ± 1.00 | 2,200.00 | no / yes |" in hopper_rows[1]
    assert "| mujoco_ant |  | 10,000,000 | 5876.09 ± 166.99 | not trained yet |" in table
    assert "| doom_battle |  | 4,000,000,000 | 59.37 ± 3.93 | cannot be trained here: its map is" in table

    older = zoo_report.earlier_table([v5, first_v4, seed2, seed1])
    assert "| mujoco_hopper | v5 | 1 | 2500.00 ± 1.00 |" in older and "`first`" in older and "`second`" not in older


def test_each_task_with_current_records_gets_a_plot_with_a_line_per_seed():
    runs = [_record("mujoco_hopper", s, MUJOCO + " --mujoco_version=v4", 1000.0 * s) for s in (1, 2, 3)]
    runs.append(_record("mujoco_swimmer", 1, MUJOCO, 50.0))  # v5 only: no current record, no plot
    files = zoo_report.plots(runs)
    assert list(files) == ["docs/img/zoo/mujoco_hopper.svg"]
    svg = ET.fromstring(files["docs/img/zoo/mujoco_hopper.svg"])
    namespace = "{http://www.w3.org/2000/svg}"
    assert len(svg.findall(f"{namespace}polyline")) == 3
    labels = [t.text for t in svg.findall(f"{namespace}text")]
    assert {"seed 1", "seed 2", "seed 3", "published", "10M"} <= set(labels)
    assert zoo_report.plots(runs) == files  # the same records give the same bytes
    section = zoo_report.curves_section(runs)
    assert "img/zoo/mujoco_hopper.svg" in section and "mujoco_swimmer" not in section


@pytest.mark.parametrize(("low", "high"), [(0.0, 10_002_432.0), (-321.4, 6402.7), (-40.5, -3.2), (1000.0, 1000.0)])
def test_ticks_are_round_and_cover_the_range(low, high):
    ticks = zoo_report.nice_ticks(low, high)
    assert ticks[0] <= low and ticks[-1] >= high and 3 <= len(ticks) <= 12
    steps = {round(b - a, 6) for a, b in zip(ticks, ticks[1:], strict=False)}
    assert len(steps) == 1


def test_the_readme_sentence_counts_tasks_runs_and_passes():
    assert "No zoo task is trained yet" in zoo_report.readme_sentence([])
    runs = [
        _record("mujoco_hopper", 1, MUJOCO + " --mujoco_version=v4", 2300.0, 2900.0),  # passes both ways
        _record("mujoco_hopper", 2, MUJOCO + " --mujoco_version=v4", 1500.0, 2200.0),  # best checkpoint only
        _record("mujoco_swimmer", 1, MUJOCO, 120.0, 120.0),  # v5: an earlier record, not counted
    ]
    sentence = zoo_report.readme_sentence(runs)
    assert "1 of the zoo's 11 tasks" in sentence and "2 runs" in sentence
    assert "the final policy of 1 and the best checkpoint of 2 of those runs" in sentence


def test_mujoco_records_made_with_the_next_row_bootstrap_are_marked():
    before = _record("mujoco_hopper", 1, MUJOCO + " --mujoco_version=v4", 2300.0)
    after = dict(before, date="2026-11-29T04:49:00+00:00")
    doom = _record("doom_basic", 1, "python -m sf_examples.vizdoom.train_vizdoom --env=doom_basic", 0.5)
    assert zoo_report.next_row_bootstrap(TASKS["mujoco_hopper"], before)
    assert not zoo_report.next_row_bootstrap(TASKS["mujoco_hopper"], after)
    assert not zoo_report.next_row_bootstrap(TASKS["doom_basic"], doom)  # the family does not bootstrap truncations
    rows = zoo_report.zoo_table([before, doom]).splitlines()
    assert [r for r in rows if r.startswith("| mujoco_hopper |")][0].endswith("`c1` † ‡ § |")
    assert [r for r in rows if r.startswith("| doom_basic |")][0].endswith("`c1` ‡ |")
    assert not zoo_report.zoo_table([after]).count("†")


def test_records_made_while_workers_started_their_envs_together_are_marked():
    before = _record("doom_basic", 1, "python -m sf_examples.vizdoom.train_vizdoom --env=doom_basic", 0.5)
    after = dict(before, date="2026-11-29T18:30:00+00:00")
    assert zoo_report.envs_started_together(before) and not zoo_report.envs_started_together(after)
    assert zoo_report.zoo_table([before]).count("‡") == 1
    assert not zoo_report.zoo_table([after]).count("‡")


def test_records_of_a_family_with_one_env_per_worker_are_never_marked_as_started_together():
    pong = _record("atari_pong", 1, "python -m sf_examples.atari.train_atari --env=atari_pong", 19.0)
    assert zoo_report.envs_started_together(pong)  # by its date alone
    assert not zoo_report.envs_started_together(pong, TASKS["atari_pong"])
    assert not zoo_report.zoo_table([pong]).count("‡")


def test_envs_per_worker_comes_from_the_command_else_the_family_defaults():
    pong, hopper, doom = TASKS["atari_pong"], TASKS["mujoco_hopper"], TASKS["doom_basic"]
    assert zoo_report.envs_per_worker(pong, "python -m sf_examples.atari.train_atari --env=atari_pong") == 1
    assert zoo_report.envs_per_worker(hopper, MUJOCO) == 8  # the MuJoCo family's default
    assert zoo_report.envs_per_worker(doom, "x --env=doom_basic") == 2  # not set by the family: the package's
    assert zoo_report.envs_per_worker(hopper, MUJOCO + " --num_envs_per_worker=4 --num_envs_per_worker=1") == 1
    assert zoo_report.envs_per_worker(pong, "x --num_envs_per_worker=4") == 4


def test_a_run_with_one_env_per_worker_is_never_marked_whatever_its_family():
    hopper = _record("mujoco_hopper", 1, MUJOCO + " --mujoco_version=v4 --num_envs_per_worker=1", 2300.0)
    assert not zoo_report.envs_started_together(hopper, TASKS["mujoco_hopper"])
    pong = _record("atari_pong", 1, "python -m sf_examples.atari.train_atari --num_envs_per_worker=2", 19.0)
    assert zoo_report.envs_started_together(pong, TASKS["atari_pong"])


def test_a_flag_the_package_does_not_have_is_named_in_the_error():
    with pytest.raises(KeyError, match="--num_envs_per_wroker is not a flag"):
        TASKS["doom_basic"].default_of("num_envs_per_wroker")


def test_records_of_runs_that_penalised_the_kl_the_other_way_round_are_marked():
    hopper = _record("mujoco_hopper", 1, MUJOCO + " --mujoco_version=v4", 2300.0)  # the family's KL penalty: 0.1
    after = dict(hopper, date="2026-12-08T02:00:00+00:00")
    no_penalty = _record("mujoco_hopper", 2, MUJOCO + " --mujoco_version=v4 --kl_loss_coeff=0", 2300.0)
    doom = _record("doom_basic", 1, "python -m sf_examples.vizdoom.train_vizdoom --env=doom_basic", 0.5)
    assert zoo_report.behaviour_first_kl(hopper, TASKS["mujoco_hopper"])
    assert not zoo_report.behaviour_first_kl(after, TASKS["mujoco_hopper"])
    assert not zoo_report.behaviour_first_kl(no_penalty, TASKS["mujoco_hopper"])
    assert not zoo_report.behaviour_first_kl(doom, TASKS["doom_basic"])  # no KL penalty in that family
    rows = [r for r in zoo_report.zoo_table([hopper, no_penalty]).splitlines() if r.startswith("| mujoco_hopper |")]
    assert rows[0].endswith("`c1` † ‡ § |") and rows[1].endswith("`c1` † ‡ |")


def test_seed_spread_runs_with_an_earlier_learning_path_are_groups_of_their_own():
    def spread(implementation: str, seed: int, date: str) -> dict:
        figures = {"implementation": implementation, "seed": seed, "stop_at": 100, "curve": [[100, 1.0, float(seed)]]}
        return {"kind": "seed_spread", "workload": "mujoco_walker", "command": MUJOCO, "commit": "c", "date": date,
                "figures": figures}  # fmt: skip

    runs = [
        spread("ours", 1, "2026-11-29T00:00:00+00:00"), spread("ours", 1, "2026-12-01T00:00:00+00:00"),
        spread("ours", 1, "2026-12-09T00:00:00+00:00"), spread("sf2_2.1.1", 1, "2026-12-09T00:00:00+00:00"),
    ]  # fmt: skip
    groups = zoo_report.spread_runs(runs)[("mujoco_walker", 100)]
    assert sorted(groups) == ["ours", "ours §", "ours, envs started together §", "sf2_2.1.1"]
    names = [line.split(" | ")[2] for line in zoo_report.spread_table(runs).splitlines()[2:]]
    assert names == ["ours", "ours §", "ours, envs started together ‡ §", "Sample Factory 2.1.1"]
