"""PBT ranking policies by the evaluator's results (``--pbt_target_objective=eval/avg_reward``): the latest evaluation
of each policy is its objective, and a replaced policy waits for an evaluation of its new weights."""

from __future__ import annotations

import logging

from test_pbt_components import pbt_cfg, started_pbt


def _evaluated(pbt, runner, scores: dict[int, float], env_steps: int = 100) -> None:
    for policy_id, score in scores.items():
        pbt.on_evaluation(runner, policy_id, env_steps, {"eval/avg_reward": score, "eval/avg_episode_len": 9.0})


def test_policies_are_ranked_by_their_latest_evaluation(tmp_path, caplog):
    cfg = pbt_cfg(tmp_path, pbt_target_objective="eval/avg_reward", eval_every_env_steps=100)
    pbt, runner = started_pbt(cfg)
    assert runner.handlers == []  # training episodes do not count
    _evaluated(pbt, runner, {0: 5.0, 1: 50.0, 2: 10.0, 3: 60.0})
    _evaluated(pbt, runner, {0: 100.0})  # only the latest evaluation counts
    assert pbt.average_objectives() == {0: 100.0, 1: 50.0, 2: 10.0, 3: 60.0}
    runner.component.sent.clear()
    runner.env_steps = {0: 99, 1: 99, 2: 150, 3: 99}
    with caplog.at_level(logging.INFO):
        pbt.on_training_step(runner, 1)
    assert "PBT: replacing policy 2 with policy 0 (eval/avg_reward 10.000 vs 100.000)" in caplog.text
    assert 2 not in pbt.average_objectives()
    _evaluated(pbt, runner, {2: 1000.0}, env_steps=140)  # evaluated the weights it had before the replacement
    assert 2 not in pbt.average_objectives()
    _evaluated(pbt, runner, {2: 30.0}, env_steps=160)
    assert pbt.average_objectives()[2] == 30.0


def test_a_target_missing_from_the_results_warns_once(tmp_path, caplog):
    cfg = pbt_cfg(tmp_path, pbt_target_objective="eval/avg_score", eval_every_env_steps=100)
    pbt, runner = started_pbt(cfg)
    with caplog.at_level(logging.WARNING):
        _evaluated(pbt, runner, {0: 1.0, 1: 2.0})
    assert caplog.text.count("--pbt_target_objective=eval/avg_score is not among the evaluation results") == 1
    assert pbt.average_objectives() == {}
