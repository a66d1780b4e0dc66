"""Any Gymnasium env trains with ``--batched_sampling=True``: its envs are stacked into one batch per split."""

from __future__ import annotations

from pathlib import Path

from example_helpers import assert_reached_reward, assert_trained, run_module, run_module_until_reward, train_args

TRAIN = "sf_examples.train_gym_env"
# The learning checks' threshold (test_learning.py). Runs are not bit-reproducible, so the run is stopped with Ctrl+C
# at its first reward line >= 450 and its budget is a ceiling: 2 workers x 8 CartPoles with these flags, seeds 1-8,
# first printed 481-500 at 123k-143k env steps (2026-11-25, 2-core machine, 12.6-13.1 s per run).
LEARNED_REWARD = 450.0
BUDGET = 400_000


def test_cartpole_learns_with_batched_sampling(tmp_path: Path) -> None:
    """Batched sampling trains CartPole-v1 to >= 450 within 400k env steps (2 workers x 8 envs, seed 1)."""
    args = train_args(tmp_path, "batched_gym", "--num_workers=2", "--num_envs_per_worker=8", "--seed=1", steps=BUDGET)
    result = run_module_until_reward(
        TRAIN, *args, "--env=CartPole-v1", "--batched_sampling=True", threshold=LEARNED_REWARD
    )
    assert_reached_reward(result, LEARNED_REWARD)


def test_serial_batched_smoke_with_two_splits_and_two_policies(tmp_path: Path) -> None:
    args = train_args(tmp_path, "batched_serial", "--serial_mode=True", "--num_workers=1", steps=4000)
    extra = ["--num_envs_per_worker=4", "--worker_num_splits=2", "--num_policies=2", "--batched_sampling=True"]
    assert_trained(run_module(TRAIN, *args, "--env=CartPole-v1", *extra), policies=(0, 1))
