"""End-to-end: every runner mode trains CartPole briefly, writes its files and leaves nothing behind."""

from __future__ import annotations

import glob

import pytest
from sf_run import run_module
from tb_events import read_scalars

BASE = ["--env=CartPole-v1", "--device=cpu", "--num_workers=2", "--num_envs_per_worker=4", "--seed=1"]


def _args(tmp_path, steps: int, *extra: str) -> list[str]:
    return [*BASE, f"--train_dir={tmp_path}", "--experiment=e2e", f"--train_for_env_steps={steps}", *extra]


@pytest.mark.parametrize(
    "serial,async_rl",
    [(False, True), (False, False), (True, True), (True, False)],
    ids=["parallel-async", "parallel-sync", "serial-async", "serial-sync"],
)
def test_mode_trains_and_cleans_up(tmp_path, serial: bool, async_rl: bool):
    result = run_module(
        "sf_examples.train_gym_env",
        _args(tmp_path, 8192, f"--serial_mode={serial}", f"--async_rl={async_rl}"),
    )
    assert result.returncode == 0, result.output[-3000:]
    assert result.collected()[0] >= 8192
    exp = tmp_path / "e2e"
    for name in ("config.json", "sf_log.txt", "done"):
        assert (exp / name).is_file(), f"{name} missing"
    assert glob.glob(str(exp / "checkpoint_p0" / "checkpoint_*.pth")), result.output[-3000:]
    assert glob.glob(str(exp / ".summary" / "0" / "events.out.tfevents.*"))
    for component in ("RolloutWorker rollout_w0", "InferenceWorker", "Batcher", "Learner"):
        assert f"{component}" in result.output and "profile tree view" in result.output


def test_summaries_use_sample_factory_tags(tmp_path):
    result = run_module(
        "sf_examples.train_gym_env",
        _args(tmp_path, 30000, "--serial_mode=True", "--experiment_summaries_interval=1"),
    )
    assert result.returncode == 0, result.output[-3000:]
    scalars = read_scalars(str(tmp_path / "e2e" / ".summary" / "0"))
    expected = [
        "0_aux/avg_reward",
        "0_aux/avg_true_objective",
        "0_aux/avg_len",
        "perf/_fps",
        "perf/_sample_throughput",
        "train/loss",
        "train/policy_loss",
        "train/value_loss",
        "train/entropy",
        "train/kl_divergence",
        "train/grad_norm",
        "train/lr",
        "train/version_diff_avg",
        "stats/memory_learner",
    ]
    missing = [tag for tag in expected if tag not in scalars]
    assert not missing, f"missing tags {missing}; present: {sorted(scalars)}"
    steps = [step for step, _ in scalars["0_aux/avg_reward"]]
    assert steps == sorted(steps) and steps[-1] >= 20000  # x axis: env steps


def test_sync_mode_has_no_policy_lag(tmp_path):
    """With --async_rl=False every sample was produced by the policy being trained on."""
    result = run_module(
        "sf_examples.train_gym_env",
        _args(tmp_path, 30000, "--serial_mode=False", "--async_rl=False", "--experiment_summaries_interval=1"),
    )
    assert result.returncode == 0, result.output[-3000:]
    lags = [line for line in result.output.splitlines() if "Policy #0 lag" in line]
    assert lags, "no status line with policy lag"
    assert all("max: 0.0" in line for line in lags), lags


def test_resume_continues_step_count(tmp_path):
    first = run_module("sf_examples.train_gym_env", _args(tmp_path, 8192, "--serial_mode=True"))
    assert first.returncode == 0
    steps = first.collected()[0]
    second = run_module("sf_examples.train_gym_env", _args(tmp_path, 2 * steps, "--serial_mode=True"))
    assert second.returncode == 0
    assert "resumed at train step" in second.output
    # only the remaining steps are collected by the second run
    assert 0 < second.collected()[0] <= steps + 2048
    third = run_module("sf_examples.train_gym_env", _args(tmp_path, 2 * steps, "--serial_mode=True"))
    assert third.returncode == 0 and "already finished" in third.output
