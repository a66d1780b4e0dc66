"""Helpers of the end-to-end example tests, on top of ``tests/sf_run.py`` (run in a session, check cleanup)."""

from __future__ import annotations

from pathlib import Path

import sf_run
from sf_run import RunResult as CommandResult

COMMAND_TIMEOUT_S = 270  # under the suite's 300 s limit: a loaded 2-core machine can take 3 minutes


def run_module(module: str, *args: str, timeout: float = COMMAND_TIMEOUT_S) -> CommandResult:
    """Run ``python -m module args`` from the repository root; fail the test if any process of it is left over."""
    return sf_run.run_module(module, list(args), timeout)


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
