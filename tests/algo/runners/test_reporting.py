"""What a run reports: each policy's summaries followed by the observers' extra_summaries (Sample Factory 2's
arguments), the best-metric averages for the run's learners only, recreated envs counted, the final report."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np

from sample_factory.algo.runners.components import LoopSpec
from sample_factory.algo.runners.reporting import RunReporting, display_name
from sample_factory.algo.runners.run_state import RunState
from sample_factory.algo.runners.stats import RunStats
from sample_factory.algo.utils.wiring import learner_name
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo


def _reporting(tmp_path, num_policies: int = 2) -> RunReporting:
    cfg = default_cfg(env="x", experiment="e")
    cfg.train_dir, cfg.num_policies = str(tmp_path), num_policies
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1, frameskip=1)
    return RunReporting(cfg, info, RunStats(cfg))


def test_each_policys_summaries_are_followed_by_extra_summaries_with_its_writer(tmp_path):
    reporting = _reporting(tmp_path)
    calls = []
    reporting.write_summaries(0, lambda *args: calls.append(args))
    assert calls == []  # not open: nothing written
    reporting.open()
    try:
        reporting.stats.record_env_steps(0, 100)
        reporting.stats.record_env_steps(1, 200)
        reporting.write_summaries(0, lambda *args: calls.append(args))
        assert [(p, step) for p, _, step in calls] == [(0, 100), (1, 200)]
        assert [writer for _, writer, _ in calls] == [reporting.writers.writers[0], reporting.writers.writers[1]]
        reporting.write_summaries(0, lambda *args: calls.append(args))
        assert len(calls) == 2  # the steps did not move: no second summary
    finally:
        reporting.close()
    assert reporting.writers is None and any((tmp_path / "e" / ".summary" / "0").iterdir())


def test_the_final_summaries_carry_episodes_reported_after_the_last_steps(tmp_path):
    """Episode reports can reach the runner after the learner's last step count: the run's last summaries (written
    once every component stopped) include them, for the observers' ``extra_summaries`` too."""
    reporting = _reporting(tmp_path)
    reporting.open()
    try:
        calls = []
        reporting.stats.record_env_steps(0, 100)
        reporting.stats.record_env_steps(1, 100)
        reporting.write_summaries(0, lambda *args: calls.append(args))
        reporting.stats.add_episode(1, 3.0, 10, 3.0, None)  # arrives after the steps stopped moving
        reporting.write_summaries(0, lambda *args: calls.append(args))
        assert len(calls) == 2  # periodic summaries: the steps did not move
        reporting.write_summaries(0, lambda *args: calls.append(args), final=True)
        assert [(p, step) for p, _, step in calls] == [(0, 100), (1, 100), (1, 100)]  # policy 1 had an episode
        reporting.write_summaries(0, lambda *args: calls.append(args), final=True)
        assert len(calls) == 3  # nothing new since
    finally:
        reporting.close()


def test_best_metric_averages_go_only_to_learners_of_the_run(tmp_path):
    reporting = _reporting(tmp_path)
    reporting.cfg.save_best_metric = "reward"
    assert reporting.best_metrics([learner_name(0), learner_name(1)]) == []  # no episode yet
    reporting.stats.add_episode(0, 3.0, 10, 3.0, None)
    reporting.stats.add_episode(0, 5.0, 10, 5.0, None)
    reporting.stats.add_episode(1, 1.0, 10, 1.0, None)
    assert reporting.best_metrics([learner_name(0)]) == [(learner_name(0), 4.0)]


def test_recreated_envs_are_counted_with_one_line(tmp_path, caplog):
    reporting = _reporting(tmp_path)
    reporting.envs_recreated("rollout_w0", 2, "ValueError: bad")
    reporting.envs_recreated("rollout_w1", 1, "ValueError: bad")
    assert reporting.stats.envs_recreated == 3
    assert caplog.messages[-1] == "rollout_w1 recreated 1 env(s) after: ValueError: bad (envs recreated in this run: 3)"


def test_the_final_report_names_each_tree_by_kind_and_ends_with_collected_and_fps(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    reporting = _reporting(tmp_path, num_policies=1)
    state = RunState(reporting.cfg)
    state.set_components([LoopSpec("rollout_w0", "rollout", ["rollout_w0"], None, worker_idx=0)])
    state.component_stopped("rollout_w0", "tree of w0")
    reporting.stats.record_env_steps(0, 0)
    reporting.stats.record_env_steps(0, 500)
    state.sampling_started_at, state.finished_at = 10.0, 12.0
    reporting.log_final_report("runner tree", state, restarts=0)
    assert caplog.messages[-3:] == [
        "Runner profile tree view:\nrunner tree",
        "RolloutWorker rollout_w0 profile tree view:\ntree of w0",
        "Collected {0: 500}, FPS: 250.0",
    ]
    assert display_name("thing", None) == "thing"


def test_episodes_that_arrive_while_stopping_get_a_reward_line(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    reporting = _reporting(tmp_path, num_policies=1)
    reporting.stats.add_episode(0, 2.0, 5, 2.0, None)
    reporting.log_late_rewards()
    assert "Avg episode reward" not in " ".join(caplog.messages)  # none arrived after the stop
    reporting.episodes_after_stop = 1
    reporting.log_late_rewards()
    assert caplog.messages[-1] == "Avg episode reward: [(0, '2.000')]"
