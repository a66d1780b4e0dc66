"""Training learns, not only runs: each test trains end to end and asserts a reward threshold.

The default suite trains CartPole-v1 in parallel mode (async, sync and V-trace); ``-m slow`` adds doom_basic and a
recurrent policy on a memory task. Every test names its budget (env steps) and seed. Parallel runs are not
bit-reproducible, in sync mode either (the order in which workers' trajectories reach the learner varies), so one seed
crosses the threshold at different steps from run to run: a CI run of sync PPO with the earlier fixed budget of 200k
steps ended at 410 (56 -> 310 -> 358 -> 397 -> 410) where local runs had reached 500. The CartPole runs are therefore
stopped with Ctrl+C at their first reward line >= 450 (``sf_run.run_python_until``), and their budget is a ceiling with
a wide margin, not the cost of a passing run. The margin is measured (2026-11-25, 2-core machine, the test's flags with
seeds 1-8, budget 600k; env steps at the first line >= 450, an upper bound as lines come every 5 s): async 116k-145k,
sync 117k-204k, V-trace 114k-228k; sync again with a busy process on one of the two cores, seeds 1-6: 124k-155k. Every
run crossed; stopped runs took 13-25 s. Yet a later CI run of sync PPO never crossed within its 500k budget: it rose to
about 400 by 350k and then swung between 310 and 442 to the end. The ceiling is therefore 800k steps for all three
(about 2 minutes at CartPole's 6,500 FPS, within the command's 270 s limit): it costs nothing to a run that crosses,
and gives one that swings below the threshold time to settle above it.

For CartPole the reward checked is the best ``Avg episode reward`` line of the run (each line is the mean over the
last 100 finished episodes): the line the test stopped at or, when a run reaches its budget first, its best line,
since PPO on CartPole is known to dip after solving it (a CI run went 485 -> 455 -> 248 -> 380 in its last 100k
steps). The slow checks below run their whole budget and use the last line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sf_run
from example_helpers import COMMAND_TIMEOUT_S, CommandResult, assert_reached_reward, run_module, run_module_until_reward

CARTPOLE_THRESHOLD = 450.0
ASYNC_STEPS = 800_000
SYNC_STEPS = 800_000
VTRACE_STEPS = 800_000  # 3.5x the slowest measured trial (228k)
TRAIN_GYM = "sf_examples.train_gym_env"


def _train_cartpole(tmp_path: Path, steps: int, *extra: str) -> CommandResult:
    """Two workers x 8 envs, parallel mode, seed 1, the Gymnasium family defaults (docs/benchmarks.md); stopped by
    Ctrl+C at the first reward line >= the threshold, so ``steps`` is a ceiling rather than the cost of every run."""
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
    return run_module_until_reward(TRAIN_GYM, *args, threshold=CARTPOLE_THRESHOLD)


def _assert_reward_at_least(result: CommandResult, threshold: float) -> float:
    """A run of the whole budget ended cleanly and its last reward line is >= threshold."""
    assert result.returncode == 0, result.explain()
    reward = result.last_reward()
    assert reward is not None, f"no 'Avg episode reward' line\n{result.explain()}"
    assert reward >= threshold, f"average reward {reward} < {threshold}\n{result.explain()}"
    print(f"average reward {reward} after {result.seconds:.1f} s")  # shown by pytest -s or -rP
    return reward


def test_cartpole_async_learns(tmp_path: Path) -> None:
    """Parallel async APPO reaches >= 450 on CartPole-v1 within ASYNC_STEPS (800k) env steps (seed 1)."""
    result = _train_cartpole(tmp_path, ASYNC_STEPS, "--async_rl=True")
    assert_reached_reward(result, CARTPOLE_THRESHOLD)


def test_cartpole_sync_learns(tmp_path: Path) -> None:
    """Parallel sync PPO (``--async_rl=False``) reaches >= 450 on CartPole-v1 within SYNC_STEPS (800k) env
    steps (seed 1)."""
    result = _train_cartpole(tmp_path, SYNC_STEPS, "--async_rl=False")
    assert_reached_reward(result, CARTPOLE_THRESHOLD)


def test_cartpole_vtrace_learns(tmp_path: Path) -> None:
    """V-trace targets (``--with_vtrace=True``, recurrence = rollout = 32 as V-trace requires) reach >= 450 on
    CartPole-v1 within VTRACE_STEPS (800k) env steps (parallel async, seed 1)."""
    result = _train_cartpole(tmp_path, VTRACE_STEPS, "--with_vtrace=True", "--recurrence=32")
    assert_reached_reward(result, CARTPOLE_THRESHOLD)


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

    The small-machine settings of docs/vizdoom.md (``--batch_size=512 --learning_rate=3e-4``) are passed explicitly:
    with them a run ended at 0.791, at or above 0.6 from 115k frames; with the family's (Sample Factory 2's) batch
    1024 and rate 1e-4 it ended at 0.689 and first reached 0.6 at 418k frames, too close to the budget for a check.

    Frames count the env's frameskip of 4, so this is 125k agent steps."""
    args = [
        "--env=doom_basic",
        "--num_workers=2",
        "--num_envs_per_worker=4",
        "--batch_size=512",
        "--learning_rate=3e-4",
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
