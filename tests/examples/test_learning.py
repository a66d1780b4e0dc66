"""Training learns, not only runs: each test trains end to end and asserts a reward threshold.

The default suite trains CartPole-v1 in parallel mode (async, sync and V-trace); ``-m slow`` adds doom_basic and a
recurrent policy on a memory task. Every test names its budget (env steps) and seed. Async runs are not
bit-reproducible (the order in which workers' trajectories reach the learner varies), so each budget leaves a
margin over the steps at which trial runs first crossed the threshold. Trials on a busy 2-core machine, three runs
each, final reward and wall time: async 500 / 500 / 500 (31-38 s), sync 500 / 500 / 500 (47-73 s), V-trace
489.7 / 489.3 / 500 (34-56 s).

The reward checked is the last ``Avg episode reward`` line: the mean over the last 100 finished episodes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sf_run
from example_helpers import COMMAND_TIMEOUT_S, CommandResult, run_module

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


# ---------------------------------------------------------------- make test-slow
DOOM_THRESHOLD = 0.6
DOOM_TIMEOUT_S = 900  # about 6 minutes on a busy 2-core machine; the suite's default limit is 300 s
MEMORY_SCRIPT = str(Path(__file__).with_name("memory_env.py"))
MEMORY_STEPS = 100_000
MEMORY_RNN_THRESHOLD = 0.8  # +1 right, -1 wrong: 0.8 means 90 % of the last 100 episodes recalled the cue
MEMORY_CHANCE_BOUND = 0.4  # chance is 0; the mean of 100 episodes of +-1 has a standard deviation of 0.1


@pytest.mark.slow
@pytest.mark.timeout(DOOM_TIMEOUT_S + 60)
def test_doom_basic_learns(tmp_path: Path) -> None:
    """doom_basic reaches an average reward >= 0.6 within 500k env frames (2 workers x 4 envs, CPU, seed 1).

    Frames count the env's frameskip of 4, so this is 125k agent steps."""
    args = [
        "--env=doom_basic",
        "--num_workers=2",
        "--num_envs_per_worker=4",
        "--train_for_env_steps=500000",
        "--device=cpu",
        "--seed=1",
        f"--train_dir={tmp_path}",
        "--experiment=doom_learn",
    ]
    result = run_module("sf_examples.vizdoom.train_vizdoom", *args, timeout=DOOM_TIMEOUT_S)
    _assert_reward_at_least(result, DOOM_THRESHOLD)


def _train_memory(tmp_path: Path, use_rnn: bool) -> CommandResult:
    """The memory task of ``memory_env.py``: 100k env steps, 2 workers x 8 envs, parallel async, seed 1."""
    args = [
        f"--use_rnn={use_rnn}",
        "--num_workers=2",
        "--num_envs_per_worker=8",
        f"--train_for_env_steps={MEMORY_STEPS}",
        "--seed=1",
        "--decorrelate_experience_max_seconds=0",
        f"--train_dir={tmp_path}",
        f"--experiment=memory_rnn_{use_rnn}",
    ]
    return sf_run.run_script(MEMORY_SCRIPT, args, timeout=COMMAND_TIMEOUT_S)


@pytest.mark.slow
def test_recurrent_policy_solves_the_memory_task(tmp_path: Path) -> None:
    """With ``--use_rnn=True`` the policy recalls a cue seen 3 steps earlier: average reward >= 0.8 (chance: 0)
    within 100k env steps (seed 1)."""
    _assert_reward_at_least(_train_memory(tmp_path, use_rnn=True), MEMORY_RNN_THRESHOLD)


@pytest.mark.slow
def test_feed_forward_policy_stays_at_chance_on_the_memory_task(tmp_path: Path) -> None:
    """The control: with ``--use_rnn=False`` and the same 100k env steps (seed 1) the average reward stays near
    chance (<= 0.4), so the recurrent policy's success comes from its memory."""
    result = _train_memory(tmp_path, use_rnn=False)
    assert result.returncode == 0, result.explain()
    reward = result.last_reward()
    assert reward is not None and reward <= MEMORY_CHANCE_BOUND, f"reward {reward}\n{result.explain()}"
    print(f"average reward {reward} after {result.seconds:.1f} s")
