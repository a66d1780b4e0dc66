"""The run's state decides when the run stops and says so through the component's RunEnd methods: an interrupt, envs
not ready in time, the env-step target (per policy), the time limit, components that do not stop in time."""

from __future__ import annotations

import logging
import time

import pytest

from sample_factory.algo.runners.components import LoopSpec
from sample_factory.algo.runners.run_state import BENCHMARK_ENV_STEPS, RunState
from sample_factory.cfg.arguments import default_cfg
from sample_factory.utils.misc import ExperimentStatus


class RecordingEnd:
    """A RunEnd that records what the stop conditions asked for."""

    def __init__(self, timeout: float = 20.0) -> None:
        self.calls: list[tuple] = []
        self.timeout = timeout
        self.asked_timeout_for: list[list[str]] = []

    def request_stop(self, save: bool = True) -> None:
        self.calls.append(("request_stop", save))

    def reached_end(self) -> None:
        self.calls.append(("reached_end",))

    def finish(self) -> None:
        self.calls.append(("finish",))

    def stop_timeout(self, still_running: list[str]) -> float:
        self.asked_timeout_for.append(still_running)
        return self.timeout

    def abandon(self, components: list[str], reason: str) -> None:
        self.calls.append(("abandon", components, reason))


def _build(*_args) -> list:
    return []


def _state(tmp_path, **overrides) -> RunState:
    cfg = default_cfg(env="x", experiment="e")
    cfg.train_dir = str(tmp_path)
    for name, value in overrides.items():
        setattr(cfg, name, value)
    state = RunState(cfg)
    specs = [
        LoopSpec("w0", "rollout", ["w0"], _build, worker_idx=0),
        LoopSpec("w1", "rollout", ["w1"], _build, worker_idx=1),
        LoopSpec("w2", "rollout", ["w2"], _build, worker_idx=2),
        LoopSpec("l0", "learner", ["b0", "l0"], _build, policy_id=0),
    ]
    state.set_components(specs)
    return state


def test_an_interrupt_stops_the_run_as_interrupted(tmp_path):
    state, end = _state(tmp_path), RecordingEnd()
    state.interrupted = True
    state.check_stop_conditions(end, {0: 0})
    assert state.status == ExperimentStatus.INTERRUPTED and end.calls == [("request_stop", True)]


def test_the_target_is_per_policy_and_ends_training_with_a_checkpoint(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    state, end = _state(tmp_path, train_for_env_steps=1000, num_policies=2), RecordingEnd()
    state.sampling_started_at = time.monotonic()
    state.check_stop_conditions(end, {0: 1500, 1: 999})
    assert end.calls == []  # one policy short of the target
    state.check_stop_conditions(end, {0: 1500, 1: 1000})
    assert end.calls == [("reached_end",), ("request_stop", True)]
    assert "Reached 1000 env steps (--train_for_env_steps=1000)" in caplog.messages


def test_a_benchmark_stops_at_its_fixed_amount_without_checkpoint_or_marker(tmp_path):
    state, end = _state(tmp_path, train_for_env_steps=10**9, benchmark=True), RecordingEnd()
    state.sampling_started_at = time.monotonic()
    assert state.target_env_steps() == BENCHMARK_ENV_STEPS
    state.check_stop_conditions(end, {0: BENCHMARK_ENV_STEPS})
    assert end.calls == [("request_stop", False)]


def test_the_time_limit_ends_training(tmp_path):
    state, end = _state(tmp_path, train_for_seconds=5), RecordingEnd()
    state.sampling_started_at = time.monotonic()
    state.check_stop_conditions(end, {0: 0})
    assert end.calls == []
    state.train_started -= 6
    state.check_stop_conditions(end, {0: 0})
    assert end.calls == [("reached_end",), ("request_stop", True)]


def test_workers_whose_envs_are_not_ready_in_time_fail_the_run_and_are_abandoned(tmp_path, caplog):
    state, end = _state(tmp_path, reset_timeout_seconds=10), RecordingEnd()
    state.envs_starting_at = {"w0": time.monotonic() - 11, "w1": time.monotonic() - 11, "w2": time.monotonic()}
    state.component_ready("w1")
    state.check_stop_conditions(end, {0: 0})
    assert state.status == ExperimentStatus.FAILURE
    assert end.calls[0] == ("request_stop", False)  # nothing was trained yet
    assert end.calls[1][:2] == ("abandon", ["w0"]) and "--reset_timeout_seconds=10" in end.calls[1][2]
    assert any("Not ready after --reset_timeout_seconds=10: w0." in m for m in caplog.messages)


def test_components_that_do_not_stop_within_the_timeout_are_given_up(tmp_path):
    state, end = _state(tmp_path), RecordingEnd(timeout=20.0)
    state.stop_requested()
    assert state.component_stopped("w0", "tree") is False
    state.check_stop_conditions(end, {0: 0})
    assert end.calls == [] and end.asked_timeout_for == [["b0", "l0", "w1", "w2"]]
    state.stop_requested_at -= 21
    state.check_stop_conditions(end, {0: 0})
    assert end.calls == [("finish",)]
    for name in ("w1", "w2", "b0"):
        state.component_stopped(name, "")
    assert state.component_stopped("l0", "") is True


def test_the_done_marker_holds_the_env_steps_of_the_policy_with_the_fewest(tmp_path):
    state = _state(tmp_path)
    (tmp_path / "e").mkdir()
    state.write_done_marker({0: 300, 1: 200})
    assert (tmp_path / "e" / "done").read_text() == "200\n"


def test_readiness_heartbeats_and_a_dead_process_forgotten(tmp_path):
    state = _state(tmp_path)
    assert state.seconds_silent(["w0"]) is None
    for name in ("w0", "w1", "w2", "b0"):
        state.component_ready(name)
    assert not state.all_ready()
    state.component_ready("l0")
    assert state.all_ready() and state.seconds_silent(["w0", "w1"]) == pytest.approx(0.0, abs=1.0)
    state.forget(["w1"])
    assert not state.all_ready() and "w1" not in state.last_heartbeat


def test_a_silent_component_is_warned_about_once_per_reporting_interval(tmp_path, caplog):
    state = _state(tmp_path, heartbeat_interval=2, heartbeat_reporting_interval=60)
    state.component_ready("w0")
    state.last_heartbeat["w0"] -= 5
    state.warn_silent_components()
    state.warn_silent_components()
    warnings = [m for m in caplog.messages if "has not sent a heartbeat" in m]
    assert len(warnings) == 1 and warnings[0].startswith("Component w0 has not sent a heartbeat for 5 s")


def test_the_final_report_shows_the_first_and_last_rollout_workers_then_the_others(tmp_path):
    assert _state(tmp_path).report_order() == ["w0", "w2", "b0", "l0"]
