"""Evaluations due by the end of a run are written even when the evaluator is slow: the run asks for them as it
reaches its target and waits for the evaluator (niced, so starved on a busy machine) to finish them before it stops."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

from sf_run import run_module

from sample_factory.algo.runners.evaluation_reports import FINAL_EVALUATIONS_TIMEOUT, EvaluationSchedule

BUSY_LOOP = "while True: pass"


def test_a_busy_machine_still_gets_every_due_evaluation(tmp_path):
    # 60k steps, due at 25k and 50k: two rows whatever the evaluator's speed (a slow first round merges the rest)
    busy = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(2)]  # a loaded machine, not niced
    try:
        result = run_module(
            "sf_examples.train_gym_env",
            ["--env=CartPole-v1", "--device=cpu", "--num_workers=2", "--num_envs_per_worker=8", "--seed=1",
             f"--train_dir={tmp_path}", "--experiment=evals", "--train_for_env_steps=60000",
             "--eval_every_env_steps=25000"],
        )  # fmt: skip
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert result.returncode == 0, result.explain()
    with open(os.path.join(tmp_path, "evals", "eval.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    steps = [int(row["env_steps"]) for row in rows]
    assert len(rows) == 2, f"{steps}\n{result.explain()}"
    assert 25_000 <= steps[0] < 50_000 <= steps[1], steps


def test_final_requests_name_each_policy_past_its_next_multiple_the_busy_one_included():
    schedule = EvaluationSchedule(every_env_steps=100, num_policies=3)
    schedule.evaluator_ready()
    assert schedule.next_request({0: 0, 1: 0, 2: 0}) is None
    assert schedule.next_request({0: 120, 1: 30, 2: 60}) == (0, 120)  # policy 0 is being evaluated
    final = schedule.final_requests({0: 230, 1: 150, 2: 90})
    assert final == [(0, 230), (1, 150)]  # policy 2 has not reached 100
    assert schedule.final_requests({0: 240, 1: 160, 2: 95}) == []  # nothing asked for twice
    stopping_left = {"evaluator", "learner_p0"}
    assert schedule.stop_timeout(20.0, stopping_left, "evaluator") == 20.0  # others still stopping: the usual limit
    assert schedule.stop_timeout(20.0, {"evaluator"}, "evaluator") == FINAL_EVALUATIONS_TIMEOUT


def test_no_final_requests_while_the_evaluator_is_down():
    schedule = EvaluationSchedule(every_env_steps=100, num_policies=1)
    schedule.next_request({0: 0})
    assert schedule.final_requests({0: 500}) is None
    assert schedule.stop_timeout(20.0, {"evaluator"}, "evaluator") == 20.0
