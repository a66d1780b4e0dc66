"""Resume exactness: N steps + resume to 2N vs. 2N steps in one go (serial, sync, fixed seed).

In serial synchronous mode the final checkpoint of a run also holds the sampler's state (envs mid-episode, last
observations, RNN states, random generators; see ``sample_factory/algo/utils/sampler_state.py``), so the resumed
run sees exactly the data the straight run saw: step counts, normaliser statistics and every weight end equal.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from lifecycle_helpers import TRAIN, cartpole_args
from sf_run import run_module

N = 8192
SYNC_SERIAL = ("--serial_mode=True", "--async_rl=False")
NORMALIZER = "obs_normalizer.running_mean_std.running_mean_std.obs."


def _final_state(train_dir: Path, experiment: str) -> dict:
    folder = train_dir / experiment / "checkpoint_p0"
    return torch.load(sorted(folder.glob("checkpoint_*.pth"))[-1], weights_only=True)


def _train(train_dir: Path, experiment: str, steps: int, *extra: str) -> None:
    args = cartpole_args(train_dir, experiment, steps, *SYNC_SERIAL, *extra)
    result = run_module(TRAIN, args)
    assert result.returncode == 0, result.output[-3000:]


@pytest.fixture(scope="module", params=[False, True], ids=["non_batched", "batched"])
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict], str]:
    """The batched sampler stacks the same envs and saves their states the same way, so it resumes exactly too."""
    train_dir = tmp_path_factory.mktemp("resume")
    sampling = f"--batched_sampling={request.param}"
    _train(train_dir, "full", 2 * N, sampling)
    _train(train_dir, "resumed", N, sampling)
    half = _final_state(train_dir, "resumed")
    _train(train_dir, "resumed", 2 * N, sampling)
    states = {"full": _final_state(train_dir, "full"), "half": half, "resumed": _final_state(train_dir, "resumed")}
    return train_dir, states, sampling


def test_resumed_run_ends_at_the_same_step_counts(runs) -> None:
    _, states, _ = runs
    full, half, resumed = states["full"], states["half"], states["resumed"]
    assert half["env_steps"] == N
    keys = ("env_steps", "train_step", "policy_version")
    assert [resumed[k] for k in keys] == [full[k] for k in keys]


def test_resumed_normalizers_continue_from_the_checkpoint(runs) -> None:
    _, states, _ = runs
    for key in (f"{NORMALIZER}count", "returns_normalizer.count"):
        assert states["half"]["model"][key].item() == N, key
        assert states["resumed"]["model"][key].item() == states["full"]["model"][key].item() == 2 * N, key


def test_resumed_normalizer_statistics_and_weights_equal_the_straight_run(runs) -> None:
    _, states, _ = runs
    full, resumed = states["full"]["model"], states["resumed"]["model"]
    for suffix in ("running_mean", "running_var"):
        for prefix in (NORMALIZER, "returns_normalizer."):
            assert torch.equal(resumed[prefix + suffix], full[prefix + suffix]), prefix + suffix
    assert full.keys() == resumed.keys()
    differing = [key for key in full if not torch.equal(full[key], resumed[key])]
    assert not differing


def test_half_run_checkpoint_holds_the_sampler_state(runs) -> None:
    _, states, _ = runs
    sampler = states["half"]["sampler"]
    assert sorted(sampler["workers"]) == [0, 1]  # --num_workers=2
    assert len(sampler["workers"][0]["splits"][0]["envs"]) == 2  # 4 envs in 2 splits


def test_uninterrupted_runs_with_the_same_seed_are_bit_identical(runs) -> None:
    train_dir, states, sampling = runs
    _train(train_dir, "full_again", 2 * N, sampling)
    again = _final_state(train_dir, "full_again")
    for suffix in ("running_mean", "running_var"):
        assert torch.equal(again["model"][NORMALIZER + suffix], states["full"]["model"][NORMALIZER + suffix])


def test_saved_sampler_state_that_does_not_fit_is_skipped_with_a_warning(runs) -> None:
    # the user resumes with fewer envs per worker: the saved env states cannot be placed, the run goes on anyway
    train_dir, _, _ = runs
    _train(train_dir, "relayout", N)
    args = cartpole_args(train_dir, "relayout", 2 * N, *SYNC_SERIAL, "--num_envs_per_worker=2")
    result = run_module(TRAIN, args)
    assert result.returncode == 0, result.output[-3000:]
    assert "the saved sampler state does not fit this run (2 envs saved in split 0, 1 now)" in result.output
    assert _final_state(train_dir, "relayout")["env_steps"] == 2 * N
