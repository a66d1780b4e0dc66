"""What a project written against Sample Factory 2 relies on, run through the public entry points by the project's
own script (``sf2_project_script.py``) with its own envs, wrappers and observer (``sf2_project_envs.py``,
``sf2_project_observers.py``):

- the observer's ``extra_summaries(runner, policy_id, writer, env_steps)`` gets the writer and the step count in the
  order Sample Factory 2 passes them;
- ``runner.policy_avg_stats`` is an empty dict until episodes come in, then ``stats[key][policy_id]`` is a deque;
- observations in another dtype than their space's are cast into the buffers, with one warning per key;
- an env wrapper whose ``reset(self)`` takes no seed works in training (both modes, the evaluator), enjoy and eval.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
from sf2_project_envs import RECORDER_LOG_ENV
from sf2_project_observers import OBSERVER_FILE
from sf_run import RunResult, run_python
from tb_events import read_scalars

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "sf2_project_script.py")
RUN_TIMEOUT_S = 240
STATS_AVG = 100


def run_project(phases: str, env: str, train_dir: Path, *flags: str, recorder_log: Path | None = None) -> RunResult:
    args = [SCRIPT, phases, f"--env={env}", f"--train_dir={train_dir}", "--experiment=project", *flags]
    if recorder_log is None:
        return run_python(args, RUN_TIMEOUT_S)
    os.environ[RECORDER_LOG_ENV] = str(recorder_log)
    try:
        return run_python(args, RUN_TIMEOUT_S)
    finally:
        del os.environ[RECORDER_LOG_ENV]


def phase(result: RunResult, name: str) -> str:
    start, end = result.output.find(f"=== {name}\n"), result.output.find(f"=== {name} status")
    assert start >= 0 and end >= 0, f"no complete {name} phase\n{result.explain()}"
    return result.output[start:end]


# ---- observer: Sample Factory 2's argument order, runner.policy_avg_stats --------------------------------------


@pytest.fixture(scope="module")
def observed_run(tmp_path_factory) -> tuple[RunResult, Path]:
    """Two policies trained in serial mode on CartPole reporting ``balance_steps``, with the project's observer."""
    train_dir = tmp_path_factory.mktemp("observed")
    flags = ["--serial_mode=True", "--num_policies=2", "--train_for_env_steps=1024", f"--stats_avg={STATS_AVG}"]
    return run_project("train", "project_scored_pole", train_dir, *flags), train_dir / "project"


def test_extra_summaries_gets_the_writer_then_the_env_steps(observed_run) -> None:
    result, experiment = observed_run
    assert result.returncode == 0, result.explain()
    assert "'int' object has no attribute 'add_scalar'" not in result.output
    seen = json.loads((experiment / OBSERVER_FILE).read_text())
    assert seen["summaries"] > 0, seen
    for policy in (0, 1):
        written = read_scalars(str(experiment / ".summary" / str(policy)))
        calls = written.get("project/summaries", [])  # (env_steps, the observer's call count) per call
        assert calls, sorted(written)
        steps, counts = [step for step, _ in calls], [count for _, count in calls]
        assert steps == sorted(steps) and steps[-1] > 0, calls  # the step count arrived as the step
        assert counts == sorted(set(counts)), calls


def test_policy_avg_stats_is_empty_until_episodes_then_a_deque_per_stat_and_policy(observed_run) -> None:
    result, experiment = observed_run
    assert result.returncode == 0, result.explain()
    seen = json.loads((experiment / OBSERVER_FILE).read_text())
    assert seen["at_start"] == {"type": "dict", "keys": [], "series": {}}, seen["at_start"]
    last = seen["last_seen"]
    assert last["type"] == "dict" and set(last["keys"]) == {"reward", "len", "true_objective", "balance_steps"}, last
    for key, series in last["series"].items():
        assert series["type"] == "list" and series["items"] == ["deque", "deque"], (key, series)
        assert series["maxlen"] == [STATS_AVG, STATS_AVG] and min(series["lengths"]) > 0, (key, series)
    assert seen["written"] and all(math.isfinite(v) for v in seen["written"]), seen["written"]
    for policy in (0, 1):
        written = read_scalars(str(experiment / ".summary" / str(policy)))
        for tag in ("project/avg_reward", "project/avg_balance_steps"):
            assert written.get(tag) and all(math.isfinite(v) for _, v in written[tag]), (tag, written.get(tag))


# ---- observations in another dtype than their space's ------------------------------------------------------------

DTYPE_WARNINGS = {
    "count": "observation 'count' of dtype float32, but its space has dtype int64",
    "state": "observation 'state' of dtype float64, but its space has dtype float32",
}


@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_observations_are_cast_to_the_space_dtype_with_one_warning_per_key(tmp_path: Path, mode: str) -> None:
    phases = "train,enjoy,eval" if mode == "serial" else "train"
    flags = [f"--serial_mode={mode == 'serial'}", "--train_for_env_steps=1024", "--max_num_episodes=2"]
    result = run_project(phases, "project_loose_dtype_pole", tmp_path, *flags)
    assert result.returncode == 0, result.explain()
    training = phase(result, "train")
    assert re.findall(r"Collected \{0: (\d+)\}", training), training[-3000:]
    for key, warning in DTYPE_WARNINGS.items():  # one rollout worker process in either mode: one warning per key
        assert training.count(warning) == 1, f"{key}: {training.count(warning)} warnings\n{training[-3000:]}"
    if mode == "serial":
        assert phase(result, "enjoy").count("Episode finished: reward=") >= 2
        assert (tmp_path / "project" / "eval_results.csv").read_text().count("\n") == 3  # header and 2 episodes


def test_an_observation_of_the_wrong_shape_stays_an_error_naming_both_shapes(tmp_path: Path) -> None:
    result = run_project("train", "project_wrong_shape_pole", tmp_path, "--serial_mode=True")
    assert result.returncode != 0, result.explain()
    assert "returned observation with shape (4,) dtype float32" in result.output, result.explain()
    assert "needs shape (5,)" in result.output, result.explain()


# ---- a wrapper whose reset() takes no seed -----------------------------------------------------------------------


def test_a_reset_without_seed_parameter_works_in_training_evaluator_enjoy_and_eval(tmp_path: Path) -> None:
    recorder_log = tmp_path / "recorder.log"
    flags = [
        "--serial_mode=False", "--train_for_env_steps=2048", "--eval_every_env_steps=512", "--eval_episodes=2",
        "--max_num_episodes=2",
    ]  # fmt: skip
    result = run_project("train,enjoy,eval", "project_recorded_pole", tmp_path, *flags, recorder_log=recorder_log)
    assert result.returncode == 0, result.explain()
    assert "unexpected keyword argument 'seed'" not in result.output, result.explain()
    training = phase(result, "train")
    # said once per process: the rollout worker's and the evaluator's (a busy machine may end the run before the
    # niced evaluator finishes an evaluation, but it resets its envs when it starts)
    seedless = set(re.findall(r"\]\[(\d+)\] FrameRecorder\.reset\(\) takes no seed", training))
    assert len(seedless) == 2, training[-3000:]
    assert not re.search(r"Evaluation of policy 0 at .* failed", training), training[-3000:]
    assert phase(result, "enjoy").count("Episode finished: reward=") >= 2
    assert (tmp_path / "project" / "eval_results.csv").read_text().count("\n") == 3
    recorded = recorder_log.read_text().splitlines()  # one line per closed recorder that stepped
    assert len(recorded) >= 3 and all("steps=" in line for line in recorded), recorded


def test_a_reset_without_seed_parameter_below_a_wrapper_passing_kwargs_on(tmp_path: Path) -> None:
    recorder_log = tmp_path / "recorder.log"
    flags = ["--serial_mode=True", "--train_for_env_steps=512"]
    result = run_project("train", "project_scored_recorded_pole", tmp_path, *flags, recorder_log=recorder_log)
    assert result.returncode == 0, result.explain()
    assert "unexpected keyword argument 'seed'" not in result.output, result.explain()
    assert phase(result, "train").count("BalanceSteps.reset() takes no seed (below it, a wrapper's does)") == 1
    assert recorder_log.read_text().count("steps=") == 2  # the two envs of the one rollout worker


# ---- the same, one call at a time --------------------------------------------------------------------------------


class _SummariesInSf2Order:
    def extra_summaries(self, runner, pid, summary_writer, step_count) -> None:
        self.got = (pid, summary_writer, step_count)


class _SummariesNamedStepsFirst:
    def extra_summaries(self, runner, policy_id, env_steps, writer) -> None:
        self.got = (policy_id, writer, env_steps)


class _SummariesTakingAnything:
    def extra_summaries(self, *args) -> None:
        self.got = args[1:]


def test_extra_summaries_arguments_follow_sample_factory_2_unless_the_names_say_otherwise() -> None:
    from sample_factory.algo.runners.runner import AlgoObserver, Runner
    from sample_factory.utils.attr_dict import AttrDict

    runner, writer = Runner(AttrDict()), object()
    observers = [_SummariesInSf2Order(), _SummariesNamedStepsFirst(), _SummariesTakingAnything()]
    for observer in observers:
        runner.register_observer(observer)
    runner.hooks.notify("extra_summaries", 1, writer, 4096)
    assert [observer.got for observer in observers] == [(1, writer, 4096)] * 3
    assert AlgoObserver().extra_summaries(runner, 0, writer, 4096) is None


def test_policy_avg_stats_layout_of_the_run_stats() -> None:
    from sample_factory.algo.runners.stats import RunStats, episode_summaries
    from sample_factory.utils.attr_dict import AttrDict

    stats = RunStats(AttrDict(num_policies=2, stats_avg=3))
    assert stats.avg_stats == {}
    stats.add_episode(1, 2.0, 10, 1.5, {"score": {"kills": 4}, "hits": np.array([1.0, 2.0]), "name": "level-1"})
    assert set(stats.avg_stats) == {"reward", "len", "true_objective", "kills", "hits"}
    assert all(isinstance(series, list) and len(series) == 2 for series in stats.avg_stats.values())
    assert list(stats.avg_stats["reward"][1]) == [2.0] and list(stats.avg_stats["reward"][0]) == []
    assert list(stats.avg_stats["kills"][1]) == [4.0] and list(stats.avg_stats["hits"][1]) == [1.0, 2.0]
    for value in range(5):
        stats.add_episode(0, float(value), 1, 0.0, None)
    assert list(stats.avg_stats["reward"][0]) == [2.0, 3.0, 4.0]  # the last --stats_avg episodes
    assert stats.avg_stats["reward"][0] is stats.policy_stats[0].reward  # one store: summaries read the same deques
    summaries = episode_summaries(stats.policy_stats[0])
    assert summaries["0_aux/avg_reward"] == 3.0 and not any(tag.startswith("policy_stats/") for tag in summaries)
