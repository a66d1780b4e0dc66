"""The runner's side of --eval_every_env_steps: a run without an evaluator asks nothing and waits for nothing; with
one, the evaluator gets its requests when they are due, and the evaluations due by the end of the run at once."""

from __future__ import annotations

from sample_factory.algo.runners.evaluation_reports import FINAL_EVALUATIONS_TIMEOUT
from sample_factory.algo.runners.evaluations import RunEvaluations
from sample_factory.algo.utils.wiring import evaluator_name
from sample_factory.cfg.arguments import default_cfg


def _evaluations(tmp_path, with_evaluator: bool) -> tuple[RunEvaluations, list[tuple]]:
    cfg = default_cfg(env="x", experiment="e")
    cfg.train_dir, cfg.eval_every_env_steps = str(tmp_path), 100
    sent: list[tuple] = []
    evaluations = RunEvaluations(cfg, lambda *message: sent.append(message))
    kinds = {"rollout_w0": "rollout", "learner_p0": "learner"}
    evaluations.attach({**kinds, evaluator_name(): "evaluator"} if with_evaluator else kinds)
    return evaluations, sent


def test_a_run_without_an_evaluator_asks_nothing_and_waits_for_nothing(tmp_path):
    evaluations, sent = _evaluations(tmp_path, with_evaluator=False)
    assert evaluations.component_ready("rollout_w0") is False
    evaluations.request_due({0: 1000})
    evaluations.request_final({0: 1000})
    evaluations.components_gone(["rollout_w0"])
    assert sent == [] and evaluations.stop_timeout(20.0, ["rollout_w0"]) == 20.0


def test_the_evaluator_is_asked_once_it_is_ready_and_a_multiple_is_passed(tmp_path):
    evaluations, sent = _evaluations(tmp_path, with_evaluator=True)
    assert evaluations.component_ready("rollout_w0") is False
    evaluations.request_due({0: 0})  # the first count: due at 100
    assert evaluations.component_ready(evaluator_name()) is True
    evaluations.request_due({0: 99})
    assert sent == []
    evaluations.request_due({0: 130})
    evaluations.request_due({0: 260})  # one request at a time
    assert sent == [(evaluator_name(), "on_evaluate", 0, 130)]
    evaluations.failed(0, 130, "boom")
    evaluations.request_due({0: 260})
    assert sent[-1] == (evaluator_name(), "on_evaluate", 0, 260)


def test_the_end_of_the_run_asks_for_the_due_evaluations_and_waits_longer_for_them(tmp_path):
    evaluations, sent = _evaluations(tmp_path, with_evaluator=True)
    evaluations.component_ready(evaluator_name())
    evaluations.request_due({0: 0})
    assert evaluations.stop_timeout(20.0, [evaluator_name()]) == 20.0  # no final evaluations asked for yet
    evaluations.request_final({0: 150})
    assert sent == [(evaluator_name(), "on_final_evaluations", [(0, 150)])]
    assert evaluations.stop_timeout(20.0, [evaluator_name()]) == FINAL_EVALUATIONS_TIMEOUT
    assert evaluations.stop_timeout(20.0, [evaluator_name(), "rollout_w0"]) == 20.0  # others still stopping


def test_an_evaluator_gone_gets_no_request_until_it_is_back(tmp_path):
    evaluations, sent = _evaluations(tmp_path, with_evaluator=True)
    evaluations.component_ready(evaluator_name())
    evaluations.request_due({0: 0})
    evaluations.components_gone(["rollout_w0", evaluator_name()])
    evaluations.request_due({0: 500})
    evaluations.request_final({0: 500})
    assert sent == []
    evaluations.component_ready(evaluator_name())
    evaluations.request_due({0: 500})
    assert sent == [(evaluator_name(), "on_evaluate", 0, 500)]


def test_a_result_becomes_a_csv_row_and_eval_scalars_at_the_summary_step(tmp_path):
    evaluations, _ = _evaluations(tmp_path, with_evaluator=True)
    evaluations.cfg.summaries_use_frameskip = False
    results = dict(avg_reward=2.5, std_reward=0.5, avg_episode_len=10.0, episodes=4.0, policy_version=7.0,
                   seconds=1.0, cpu_seconds=1.0, env_steps_played=40.0)  # fmt: skip
    evaluations.component_ready(evaluator_name())
    scalars, step = evaluations.record(0, 400, results, frameskip=4)
    assert step == 100 and scalars["eval/avg_reward"] == 2.5 and "eval/episodes" not in scalars
    assert (tmp_path / "e" / "eval.csv").read_text().count("\n") == 2
