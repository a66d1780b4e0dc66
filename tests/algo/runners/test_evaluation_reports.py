"""The runner's side of evaluation: when the evaluator is asked (one request at a time, each policy every N env
steps, overdue multiples merged, a lost request asked again) and what a result becomes (eval.csv rows, a log line)."""

from __future__ import annotations

import csv

from sample_factory.algo.runners.evaluation_reports import (
    EVAL_CSV_FILE,
    EvaluationResults,
    EvaluationSchedule,
    summary_step,
)
from sample_factory.cfg.arguments import default_cfg


def test_each_policy_is_due_every_n_env_steps_one_request_at_a_time():
    schedule = EvaluationSchedule(every_env_steps=100, num_policies=2)
    assert schedule.next_request({0: 0, 1: 0}) is None  # the evaluator is not ready yet
    schedule.evaluator_ready()
    assert schedule.next_request({0: 50, 1: 99}) is None
    assert schedule.next_request({0: 120, 1: 140}) == (1, 140)  # the more overdue one first
    assert schedule.next_request({0: 130, 1: 150}) is None  # one in flight
    schedule.finished()
    assert schedule.next_request({0: 130, 1: 150}) == (0, 130)
    schedule.finished()
    assert schedule.next_request({0: 190, 1: 199}) is None  # next at 200 for both


def test_multiples_passed_during_a_slow_evaluation_are_merged_into_one():
    schedule = EvaluationSchedule(every_env_steps=100, num_policies=1)
    schedule.evaluator_ready()
    assert schedule.next_request({0: 0}) is None  # a fresh run: the learner reports 0 first
    assert schedule.next_request({0: 100}) == (0, 100)
    assert schedule.next_request({0: 450}) is None
    schedule.finished()
    assert schedule.next_request({0: 450}) == (0, 450)  # 200, 300 and 400 together, tagged with the count now
    schedule.finished()
    assert schedule.next_request({0: 499}) is None and schedule.next_request({0: 500}) == (0, 500)


def test_a_resumed_run_counts_from_where_it_resumed():
    schedule = EvaluationSchedule(every_env_steps=100, num_policies=1)
    schedule.evaluator_ready()
    assert schedule.next_request({0: 1250}) is None  # the first count seen: the next evaluation at 1300
    assert schedule.next_request({0: 1300}) == (0, 1300)


def test_a_request_lost_with_the_evaluator_is_asked_again_when_it_is_back():
    schedule = EvaluationSchedule(every_env_steps=100, num_policies=1)
    schedule.evaluator_ready()
    assert schedule.next_request({0: 0}) is None
    assert schedule.next_request({0: 100}) == (0, 100)
    schedule.evaluator_gone()
    assert schedule.next_request({0: 130}) is None
    schedule.evaluator_ready()
    assert schedule.next_request({0: 140}) == (0, 140)


RESULTS = dict(
    episodes=10.0, avg_reward=12.5, std_reward=1.0, min_reward=10.0, max_reward=15.0, avg_episode_len=12.5,
    avg_true_objective=12.5, policy_version=42.0, seconds=0.7, cpu_seconds=0.3, env_steps_played=125.0,
)  # fmt: skip


def _cfg(tmp_path):
    cfg = default_cfg(env="CartPole-v1", experiment="ev")
    cfg.train_dir = str(tmp_path)
    cfg.eval_every_env_steps = 100
    return cfg


def _rows(tmp_path) -> list[dict]:
    with open(tmp_path / "ev" / EVAL_CSV_FILE, newline="") as f:
        return list(csv.DictReader(f))


def test_results_become_scalars_csv_rows_and_a_log_line(tmp_path, caplog):
    results = EvaluationResults(_cfg(tmp_path))
    with caplog.at_level("INFO"):
        scalars = results.record(0, 1000, RESULTS)
    assert scalars["eval/avg_reward"] == 12.5 and scalars["eval/avg_episode_len"] == 12.5
    assert "eval/episodes" not in scalars and "eval/policy_version" not in scalars  # bookkeeping: csv only
    assert (
        "Evaluation of policy 0 at 1000 env steps (version 42, CartPole-v1, sampled actions): avg reward 12.500 +- "
        "1.000 over 10 episodes, avg episode len 12.5 (0.7 s, 0.3 s of CPU)" in caplog.text
    )
    results.record(1, 1100, {**RESULTS, "avg_reward": 20.0})
    rows = _rows(tmp_path)
    assert [(r["policy_id"], r["env_steps"], r["avg_reward"]) for r in rows] == [
        ("0", "1000", "12.5"),
        ("1", "1100", "20"),
    ]
    assert list(rows[0])[:4] == ["policy_id", "env_steps", "eval_env", "deterministic"]


def test_a_new_extra_stat_adds_a_column_and_a_resumed_run_appends(tmp_path):
    results = EvaluationResults(_cfg(tmp_path))
    results.record(0, 100, RESULTS)
    results.record(0, 200, {**RESULTS, "avg_reached_goal": 0.5})
    rows = _rows(tmp_path)
    assert [r["avg_reached_goal"] for r in rows] == ["", "0.5"]
    resumed = EvaluationResults(_cfg(tmp_path))
    resumed.record(0, 300, RESULTS)
    assert [r["env_steps"] for r in _rows(tmp_path)] == ["100", "200", "300"]


def test_summary_steps_follow_the_frameskip_rule_of_the_training_summaries():
    cfg = default_cfg(env="x")
    cfg.summaries_use_frameskip = True
    assert summary_step(cfg, 4000, 4) == 4000
    cfg.summaries_use_frameskip = False
    assert summary_step(cfg, 4000, 4) == 1000
