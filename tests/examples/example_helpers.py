"""Helpers of the end-to-end example tests, on top of ``tests/sf_run.py`` (run in a session, check cleanup)."""

from __future__ import annotations

from pathlib import Path

import sf_run
from sf_run import RunResult as CommandResult

COMMAND_TIMEOUT_S = 270  # under the suite's 300 s limit: a loaded 2-core machine can take 3 minutes
SUCCESS, INTERRUPTED = 0, 2  # exit codes of a run that reached its budget, and of one stopped with Ctrl+C


def run_module(module: str, *args: str, timeout: float = COMMAND_TIMEOUT_S) -> CommandResult:
    """Run ``python -m module args`` from the repository root; fail the test if any process of it is left over."""
    return sf_run.run_module(module, list(args), timeout)


def run_module_until_reward(module: str, *args: str, threshold: float) -> CommandResult:
    """Run ``python -m module args`` and stop it with Ctrl+C at its first ``Avg episode reward`` line >= threshold.

    Parallel runs are not bit-reproducible, so a learning check stops at its threshold rather than judging the reward
    at a fixed step count; its ``--train_for_env_steps`` is then a ceiling, not the cost of every run."""
    return sf_run.run_python_until(["-m", module, *args], sf_run.reward_reached(threshold), COMMAND_TIMEOUT_S)


def assert_reached_reward(result: CommandResult, threshold: float) -> float:
    """A run of ``run_module_until_reward`` ended cleanly (stopped there, or at its budget) with a reward line >=
    threshold; returns its best reward line."""
    assert result.returncode in (SUCCESS, INTERRUPTED), result.explain()
    reward = result.best_reward()
    assert reward is not None and reward >= threshold, f"best average reward {reward} < {threshold}\n{result.explain()}"
    print(f"average reward {reward} after {result.seconds:.1f} s")  # shown by pytest -s or -rP
    return reward


def assert_trained(result: CommandResult, policies: tuple[int, ...] = (0,)) -> dict[int, int]:
    """Exit code 0 and a ``Collected`` line with a positive sample count for each of ``policies``."""
    assert result.returncode == 0, result.explain()
    collected = result.collected()
    for policy in policies:
        assert collected.get(policy, 0) > 0, f"policy {policy} collected nothing: {collected}\n{result.explain()}"
    return collected


def train_args(train_dir: Path, experiment: str, *extra: str, steps: int = 4000) -> list[str]:
    """Flags shared by every short training run of these tests."""
    return [
        f"--train_dir={train_dir}",
        f"--experiment={experiment}",
        f"--train_for_env_steps={steps}",
        "--device=cpu",
        "--decorrelate_experience_max_seconds=0",
        *extra,
    ]
