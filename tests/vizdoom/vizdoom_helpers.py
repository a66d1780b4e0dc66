"""Helpers of the VizDoom tests, on top of ``tests/sf_run.py``.

ViZDoom engines are children of the env's process and share its process group, so the empty-group check of
``sf_run`` means no engine survived, and its /dev/shm check covers the ``ViZDoom*`` segments.
"""

from __future__ import annotations

from pathlib import Path

import sf_run
from sf_run import RunResult

REPO_ROOT = Path(sf_run.REPO_ROOT)

__all__ = ["REPO_ROOT", "RunResult", "run_module", "run_python", "train_args"]


def run_module(module: str, *args: str, timeout: float = 240.0) -> RunResult:
    """Run the module from the repository root; assert nothing of it (process or ViZDoom segment) is left."""
    return sf_run.run_module(module, list(args), timeout)


def run_python(*args: str, timeout: float = 240.0) -> RunResult:
    """``python args`` in a new session, with the checks of ``run_module``."""
    return sf_run.run_python(list(args), timeout)


def train_args(train_dir: Path, experiment: str, *extra: str, steps: int = 4000) -> list[str]:
    """Flags of every short training run of these tests."""
    return [
        f"--train_dir={train_dir}",
        f"--experiment={experiment}",
        f"--train_for_env_steps={steps}",
        "--device=cpu",
        "--decorrelate_experience_max_seconds=0",
        "--batch_size=512",
        "--rollout=16",
        *extra,
    ]
