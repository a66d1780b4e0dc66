"""Checkpoints cross between this library and the Sample Factory 2.1.1 release, both ways (slow).

Each system trains three tiny models (CartPole MLP, CartPole GRU, doom_basic conv + GRU); then the release's enjoy
runs this library's checkpoints and this library's enjoy runs the release's. The release runs from its own venv
(``bench/compare_sf2.py``'s reference venv, created when missing: it needs the package index), as a subprocess in
an empty folder without PYTHONPATH, so nothing of this repository is on its path.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from sf_run import REPO_ROOT, RunResult, finish, run_module, shm_entries

pytestmark = pytest.mark.slow

REFERENCE_VENV = os.environ.get("SF2_REFERENCE_VENV", "/tmp/sf2ref-venv")
TORCH_REQUIREMENT = "torch==2.13.0"
COMMON = ["--device=cpu", "--seed=1", "--num_workers=1", "--num_envs_per_worker=2", "--rollout=32", "--batch_size=256"]
# the example's CartPole defaults differ between the two systems (64 units here): the same width for both
MLP_WIDTH = ["--encoder_mlp_layers", "64", "64"]
# name -> (train module, enjoy module, env, flags, env steps)
MODELS: dict[str, tuple[str, str, str, list[str], int]] = {
    "mlp": (
        "sf_examples.train_gym_env",
        "sf_examples.enjoy_gym_env",
        "CartPole-v1",
        ["--use_rnn=False", *MLP_WIDTH],
        1024,
    ),
    "gru": (
        "sf_examples.train_gym_env",
        "sf_examples.enjoy_gym_env",
        "CartPole-v1",
        ["--use_rnn=True", "--rnn_type=gru", *MLP_WIDTH],
        1024,
    ),
    "conv": (
        "sf_examples.vizdoom.train_vizdoom",
        "sf_examples.vizdoom.enjoy_vizdoom",
        "doom_basic",
        ["--use_rnn=True", "--rnn_type=gru"],
        1024,
    ),
}


def _compare_sf2():
    spec = importlib.util.spec_from_file_location("compare_sf2", os.path.join(REPO_ROOT, "bench", "compare_sf2.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("compare_sf2", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sf2_python() -> str:
    """The release's interpreter; the test is skipped, saying why, when its venv cannot be created here."""
    try:
        return _compare_sf2().ensure_reference(REFERENCE_VENV, TORCH_REQUIREMENT, {"vizdoom"})
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"Sample Factory 2.1.1 could not be installed into {REFERENCE_VENV}: {exc}")


def _run_sf2(python: str, cwd: Path, module: str, args: list[str], timeout: float = 300.0) -> RunResult:
    """``python -m module args`` of the release, in its own session, from ``cwd``, without PYTHONPATH."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONUNBUFFERED"] = "1"
    before = shm_entries()
    started = time.monotonic()
    proc = subprocess.Popen(
        [python, "-m", module, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    return finish(proc, started, timeout, before)


def _train_args(train_dir: Path, experiment: str, name: str) -> list[str]:
    _, _, env, flags, steps = MODELS[name]
    return [f"--env={env}", f"--experiment={experiment}", f"--train_dir={train_dir}", *COMMON, *flags] + [
        f"--train_for_env_steps={steps}"
    ]


def _enjoy_args(train_dir: Path, experiment: str, name: str) -> list[str]:
    env = MODELS[name][2]
    return [
        f"--env={env}",
        f"--experiment={experiment}",
        f"--train_dir={train_dir}",
        "--device=cpu",
        "--no_render",
        "--max_num_episodes=1",
        "--max_num_frames=400",
    ]


def _checkpoint(train_dir: Path, experiment: str) -> dict:
    paths = sorted((train_dir / experiment / "checkpoint_p0").glob("checkpoint_*.pth"))
    assert paths, f"no checkpoint in {train_dir / experiment}"
    return torch.load(paths[-1], map_location="cpu", weights_only=True)


@pytest.fixture(scope="module")
def trained(sf2_python: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(train_dir, scratch)``: experiments ``ours_<name>`` and ``sf2_<name>`` of every model."""
    train_dir = tmp_path_factory.mktemp("sf2_checkpoints")
    scratch = tmp_path_factory.mktemp("sf2_cwd")  # the release's working folder: empty, no repository files
    for name, (train_module, *_rest) in MODELS.items():
        ours = run_module(train_module, _train_args(train_dir, f"ours_{name}", name), timeout=300)
        assert ours.returncode == 0, ours.explain()
        theirs = _run_sf2(sf2_python, scratch, train_module, _train_args(train_dir, f"sf2_{name}", name))
        assert theirs.returncode == 0, theirs.explain()
    return train_dir, scratch


@pytest.mark.parametrize("name", list(MODELS))
def test_both_systems_write_the_same_state_dict_layout(trained, name: str):
    train_dir, _ = trained
    ours, theirs = _checkpoint(train_dir, f"ours_{name}")["model"], _checkpoint(train_dir, f"sf2_{name}")["model"]
    assert {k: tuple(v.shape) for k, v in ours.items()} == {k: tuple(v.shape) for k, v in theirs.items()}
    assert {k: v.dtype for k, v in ours.items()} == {k: v.dtype for k, v in theirs.items()}


@pytest.mark.parametrize("name", list(MODELS))
def test_sf2_enjoy_runs_a_checkpoint_written_here(sf2_python: str, trained, name: str):
    train_dir, scratch = trained
    result = _run_sf2(sf2_python, scratch, MODELS[name][1], _enjoy_args(train_dir, f"ours_{name}", name))
    # the release's gym enjoy exits with its (status, reward) tuple, so its exit code is 1 even when all went well
    assert "Traceback" not in result.output, result.explain()
    assert "Loading state from checkpoint" in result.output, result.explain()
    assert "Avg episode reward" in result.output, result.explain()


@pytest.mark.parametrize("name", list(MODELS))
def test_enjoy_here_runs_a_checkpoint_written_by_sf2(trained, name: str):
    train_dir, _ = trained
    result = run_module(MODELS[name][1], _enjoy_args(train_dir, f"sf2_{name}", name), timeout=300)
    assert result.returncode == 0, result.explain()
    assert "Loaded checkpoint" in result.output and "Avg episode reward" in result.output, result.explain()
