"""Resume exactness: N steps + resume to 2N vs. 2N steps in one go (serial, sync, fixed seed).

What must be equal, and is: env steps, train steps, policy version and the normalisers' sample counts, i.e. a
resumed run neither loses nor repeats training data and its normalisers continue from the checkpoint instead of
restarting. What cannot be equal: the normalisers' mean/var. A checkpoint holds the learner's state, not the
envs' (CartPole's physics state and RNG mid-episode) nor the RNG streams of action sampling, so the resumed run
restarts every env with a fresh episode and its second half sees different observations. A second uninterrupted
run with torch seeded reproduces the first bit for bit, which shows nothing else differs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from lifecycle_helpers import TRAIN, cartpole_args
from sf_run import run_module, run_script

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDED_TRAIN = os.path.join(HERE, "seeded_train.py")
N = 8192
SYNC_SERIAL = ("--serial_mode=True", "--async_rl=False")
NORMALIZER = "obs_normalizer.running_mean_std.obs."


def _final_state(train_dir: Path, experiment: str) -> dict:
    folder = train_dir / experiment / "checkpoint_p0"
    return torch.load(sorted(folder.glob("checkpoint_*.pth"))[-1], weights_only=True)


def _train(train_dir: Path, experiment: str, steps: int, seeded: bool) -> None:
    args = cartpole_args(train_dir, experiment, steps, *SYNC_SERIAL)
    result = run_script(SEEDED_TRAIN, args) if seeded else run_module(TRAIN, args)
    assert result.returncode == 0, result.output[-3000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    train_dir = tmp_path_factory.mktemp("resume")
    _train(train_dir, "full", 2 * N, seeded=True)
    _train(train_dir, "resumed", N, seeded=False)
    half = _final_state(train_dir, "resumed")
    _train(train_dir, "resumed", 2 * N, seeded=False)
    states = {"full": _final_state(train_dir, "full"), "half": half, "resumed": _final_state(train_dir, "resumed")}
    return train_dir, states


def test_resumed_run_ends_at_the_same_step_counts(runs) -> None:
    _, states = runs
    full, half, resumed = states["full"], states["half"], states["resumed"]
    assert half["env_steps"] == N
    keys = ("env_steps", "train_step", "policy_version")
    assert [resumed[k] for k in keys] == [full[k] for k in keys]


def test_resumed_normalizers_continue_from_the_checkpoint(runs) -> None:
    _, states = runs
    for key in (f"{NORMALIZER}count", "returns_normalizer.count"):
        assert states["half"]["model"][key].item() == N, key
        assert states["resumed"]["model"][key].item() == states["full"]["model"][key].item() == 2 * N, key


def test_uninterrupted_seeded_runs_are_bit_identical(runs) -> None:
    train_dir, states = runs
    _train(train_dir, "full_again", 2 * N, seeded=True)
    again = _final_state(train_dir, "full_again")
    for suffix in ("running_mean", "running_var"):
        assert torch.equal(again["model"][NORMALIZER + suffix], states["full"]["model"][NORMALIZER + suffix])
