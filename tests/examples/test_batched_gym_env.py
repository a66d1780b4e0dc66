"""Any Gymnasium env trains with ``--batched_sampling=True``: its envs are stacked into one batch per split."""

from __future__ import annotations

from pathlib import Path

from example_helpers import assert_trained, run_module, train_args

TRAIN = "sf_examples.train_gym_env"
# 2 workers x 8 CartPoles reach the 500-step cap by 120k steps with this seed (three runs ended at 499-500);
# 200 leaves room for the scheduling noise of a busy machine
LEARNED_REWARD = 200.0


def test_cartpole_learns_with_batched_sampling(tmp_path: Path) -> None:
    args = train_args(tmp_path, "batched_gym", "--num_workers=2", "--num_envs_per_worker=8", "--seed=1", steps=120_000)
    result = run_module(TRAIN, *args, "--env=CartPole-v1", "--batched_sampling=True")
    assert_trained(result)
    reward = result.last_reward()
    assert reward is not None and reward >= LEARNED_REWARD, result.explain()


def test_serial_batched_smoke_with_two_splits_and_two_policies(tmp_path: Path) -> None:
    args = train_args(tmp_path, "batched_serial", "--serial_mode=True", "--num_workers=1", steps=4000)
    extra = ["--num_envs_per_worker=4", "--worker_num_splits=2", "--num_policies=2", "--batched_sampling=True"]
    assert_trained(run_module(TRAIN, *args, "--env=CartPole-v1", *extra), policies=(0, 1))
