"""End to end: best and milestone checkpoints appear during training; a corrupt newest checkpoint is skipped."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch
from lifecycle_helpers import TRAIN, cartpole_args
from sf_run import RunResult, run_module

from sample_factory.algo.utils.checkpoints import list_checkpoints, load_checkpoint_file

BEST_RE = re.compile(r"best_(\d{9})_(\d+)_reward_(-?\d+\.\d{3})\.pth$")
BEST_AFTER = 8192
CHECKPOINT_KEYS = {"model", "optimizer", "train_step", "env_steps", "policy_version", "best_metric", "lr_schedule"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunResult]:
    train_dir = tmp_path_factory.mktemp("ckpt")
    extra = [
        "--serial_mode=True",
        f"--save_best_after={BEST_AFTER}",
        "--save_best_every_sec=1",
        "--save_milestones_sec=1",
        "--save_every_sec=1",
    ]
    # long enough after BEST_AFTER for several of the runner's 1-second best-metric checks on a loaded machine
    result = run_module(TRAIN, cartpole_args(train_dir, "exp", 100_000, *extra), timeout=120)
    assert result.returncode == 0, result.output[-3000:]
    return train_dir / "exp" / "checkpoint_p0", result


def test_best_checkpoint_appears_after_threshold_with_its_score(trained) -> None:
    folder, result = trained
    best = [p for p in folder.iterdir() if p.name.startswith("best_")]
    assert len(best) == 1, f"exactly one best file expected (older bests are deleted): {best}"
    match = BEST_RE.search(best[0].name)
    assert match, best[0].name
    train_step, env_steps, value = int(match.group(1)), int(match.group(2)), float(match.group(3))
    assert env_steps >= BEST_AFTER
    state = load_checkpoint_file(str(best[0]))
    assert CHECKPOINT_KEYS <= set(state)
    assert (state["train_step"], state["env_steps"]) == (train_step, env_steps)
    assert state["best_metric"] == pytest.approx(value, abs=5e-4)
    assert any(k.startswith("obs_normalizer") for k in state["model"])  # normalisers travel with the weights
    assert "new best reward" in result.output


def test_latest_checkpoint_remembers_best_metric_and_milestones_are_kept(trained) -> None:
    folder, _ = trained
    latest = load_checkpoint_file(str(sorted(folder.glob("checkpoint_*.pth"))[-1]))
    best_value = float(BEST_RE.search(next(folder.glob("best_*.pth")).name).group(3))
    assert latest["best_metric"] == pytest.approx(best_value, abs=5e-4)  # a resumed run keeps the bar
    milestones = sorted((folder / "milestones").glob("checkpoint_*.pth"))
    assert milestones, "no milestone written"
    assert isinstance(load_checkpoint_file(str(milestones[0]))["model"], dict)
    assert len(list(folder.glob("checkpoint_*.pth"))) <= 2  # --keep_checkpoints rotation, milestones untouched


def test_corrupt_newest_checkpoint_resumes_from_previous(trained, tmp_path: Path) -> None:
    folder, _ = trained
    shutil.copytree(folder.parent, tmp_path / "exp")
    copy_cfg = type("Cfg", (), {"train_dir": str(tmp_path), "experiment": "exp"})
    paths = list_checkpoints(copy_cfg, 0)
    assert len(paths) == 2, paths
    with open(paths[-1], "r+b") as f:
        f.truncate(100)
    (tmp_path / "exp" / "done").unlink(missing_ok=True)
    previous = torch.load(paths[0], weights_only=True)
    result = run_module(TRAIN, cartpole_args(tmp_path, "exp", previous["env_steps"] + 2048, "--serial_mode=True"))
    assert result.returncode == 0, result.output[-3000:]
    assert "Skipping unreadable checkpoint" in result.output
    expected = f"resumed at train step {previous['train_step']}, env steps {previous['env_steps']}"
    assert expected in result.output, result.output[-3000:]
