"""Training learns, not only runs: each test trains end to end and asserts a reward threshold.

The default suite trains CartPole-v1 in parallel mode (async, sync and V-trace); ``-m slow`` adds doom_basic and a
recurrent policy on a memory task. Every test names its budget (env steps) and seed. Async runs are not
bit-reproducible (the order in which workers' trajectories reach the learner varies), so the budgets leave a
margin: each was chosen as roughly 1.5x the steps at which the threshold was first reached in trial runs on a busy
2-core machine (see the report of the commit that added them).

The reward checked is the last ``Avg episode reward`` line: the mean over the last 100 finished episodes.
"""

from __future__ import annotations

from pathlib import Path

from example_helpers import CommandResult, run_module

CARTPOLE_THRESHOLD = 450.0
TRAIN_GYM = "sf_examples.train_gym_env"


def _train_cartpole(tmp_path: Path, steps: int, *extra: str) -> CommandResult:
    """Two workers x 8 envs, parallel mode, seed 1, the Gymnasium family defaults (docs/benchmarks.md)."""
    args = [
        "--env=CartPole-v1",
        "--num_workers=2",
        "--num_envs_per_worker=8",
        f"--train_for_env_steps={steps}",
        "--device=cpu",
        "--seed=1",
        "--decorrelate_experience_max_seconds=0",
        f"--train_dir={tmp_path}",
        "--experiment=learn",
        *extra,
    ]
    return run_module(TRAIN_GYM, *args)


def _assert_reward_at_least(result: CommandResult, threshold: float) -> float:
    assert result.returncode == 0, result.explain()
    reward = result.last_reward()
    assert reward is not None, f"no 'Avg episode reward' line\n{result.explain()}"
    assert reward >= threshold, f"average reward {reward} < {threshold}\n{result.explain()}"
    print(f"average reward {reward} after {result.seconds:.1f} s")  # shown by pytest -s or -rP
    return reward


def test_cartpole_async_learns(tmp_path: Path) -> None:
    """Parallel async APPO reaches >= 450 on CartPole-v1 within 150k env steps (seed 1)."""
    _assert_reward_at_least(_train_cartpole(tmp_path, 150_000, "--async_rl=True"), CARTPOLE_THRESHOLD)


def test_cartpole_sync_learns(tmp_path: Path) -> None:
    """Parallel sync PPO (``--async_rl=False``) reaches >= 450 on CartPole-v1 within 200k env steps (seed 1)."""
    _assert_reward_at_least(_train_cartpole(tmp_path, 200_000, "--async_rl=False"), CARTPOLE_THRESHOLD)


def test_cartpole_vtrace_learns(tmp_path: Path) -> None:
    """V-trace targets (``--with_vtrace=True``, recurrence = rollout = 32 as V-trace requires) reach >= 450 on
    CartPole-v1 within 150k env steps (parallel async, seed 1)."""
    result = _train_cartpole(tmp_path, 150_000, "--with_vtrace=True", "--recurrence=32")
    _assert_reward_at_least(result, CARTPOLE_THRESHOLD)
