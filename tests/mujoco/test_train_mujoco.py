"""End to end: MuJoCo envs train (parallel runner, one worker), enjoy writes an MP4, eval writes its CSV.

Default suite: mujoco_pendulum and mujoco_halfcheetah train, enjoy/eval/--help/the throughput tool. Every other
env, and the 300k-step pendulum learning check, run under ``-m slow``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import sf_run
from sf_run import RunResult

from sf_examples.mujoco.mujoco_utils import MUJOCO_ENVS, choose_headless_gl

TRAIN = "sf_examples.mujoco.train_mujoco"
ENJOY = "sf_examples.mujoco.enjoy_mujoco"
FAST_EVAL = "sf_examples.mujoco.fast_eval_mujoco"
THROUGHPUT = "sf_examples.sampler.random_policy_throughput"
FAST_ENVS = ("mujoco_pendulum", "mujoco_halfcheetah")
STEPS = 2000


def run_module(module: str, *args: str, timeout: float = 240.0) -> RunResult:
    return sf_run.run_module(module, list(args), timeout)


def train(train_dir: Path, env: str, *extra: str, steps: int = STEPS) -> RunResult:
    """A short parallel run with one worker and small updates, so a few thousand steps give several of them."""
    flags = dict(batch_size=256, num_batches_per_epoch=1)
    return run_module(TRAIN, *sf_run.short_run_args(train_dir, env, steps, *extra, **flags))


@pytest.fixture(scope="module")
def pendulum_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One short pendulum run shared by the enjoy and eval tests."""
    train_dir = tmp_path_factory.mktemp("mujoco")
    train(train_dir, "mujoco_pendulum").assert_trained(STEPS)
    return train_dir


def test_pendulum_trains_and_saves_family_config(pendulum_dir: Path) -> None:
    experiment = pendulum_dir / "mujoco_pendulum"
    assert list((experiment / "checkpoint_p0").glob("checkpoint_*.pth"))
    config = (experiment / "config.json").read_text()
    assert '"lr_schedule": "linear_decay"' in config and '"mujoco_render_width": 320' in config


@pytest.mark.parametrize("env", FAST_ENVS[1:])
def test_fast_env_trains(tmp_path: Path, env: str) -> None:
    train(tmp_path, env).assert_trained(STEPS)


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(set(MUJOCO_ENVS) - set(FAST_ENVS)))
def test_every_env_trains(tmp_path: Path, env: str) -> None:
    train(tmp_path, env).assert_trained(STEPS)


def test_enjoy_writes_mp4(pendulum_dir: Path) -> None:
    if choose_headless_gl() is None:
        pytest.skip("no EGL or OSMesa library on this machine")
    args = ("--env=mujoco_pendulum", f"--train_dir={pendulum_dir}", "--experiment=mujoco_pendulum", "--save_video")
    result = run_module(ENJOY, *args, "--video_frames=30", "--max_num_episodes=1", "--video_name=replay.mp4")
    assert result.returncode == 0, result.explain()
    video = pendulum_dir / "mujoco_pendulum" / "replay.mp4"
    assert video.stat().st_size > 1000, result.explain()


def _read_eval_csv(experiment: Path) -> list[dict[str, str]]:
    with open(experiment / "eval_results.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("module", ["sample_factory.eval", FAST_EVAL])
def test_eval_writes_csv(pendulum_dir: Path, module: str) -> None:
    """The generic tool finds the family through the plugin registry; the family script does the same directly."""
    experiment = pendulum_dir / "mujoco_pendulum"
    (experiment / "eval_results.csv").unlink(missing_ok=True)
    args = ("--env=mujoco_pendulum", f"--train_dir={pendulum_dir}", "--experiment=mujoco_pendulum")
    result = run_module(module, *args, "--max_num_episodes=3")
    assert result.returncode == 0, result.explain()
    rows = _read_eval_csv(experiment)
    assert len(rows) == 3 and all(float(row["reward"]) > 0 for row in rows)  # the pendulum pays 1 per step


def test_help_shows_family_flags_and_defaults() -> None:
    result = run_module(TRAIN, "--env=mujoco_ant", "--help", timeout=60)
    assert result.returncode == 0, result.explain()
    assert "--mujoco_render_width" in result.output
    assert re.search(r"--lr_schedule .*?\(default:\s+linear_decay\)", result.output, re.S)


def test_eval_help_shows_family_flags() -> None:
    result = run_module("sample_factory.eval", "--env=mujoco_ant", "--help", timeout=60)
    assert result.returncode == 0, result.explain()
    assert "--mujoco_render_width" in result.output


def test_unknown_env_fails_before_starting() -> None:
    result = run_module(TRAIN, "--env=mujoco_cheetah", "--experiment=x", "--device=cpu", timeout=60)
    assert result.returncode == 1
    assert "mujoco_halfcheetah" in result.output


def test_random_policy_throughput() -> None:
    args = ("--env=mujoco_halfcheetah", "--num_workers=1", "--num_envs_per_worker=2", "--seconds=2")
    result = run_module(THROUGHPUT, *args, timeout=120)
    assert result.returncode == 0, result.explain()
    frames, agent_steps = map(int, re.search(r"(\d+) frames \((\d+) agent steps\)", result.output).groups())
    assert agent_steps > 0 and frames == agent_steps


@pytest.mark.slow
def test_pendulum_learns(tmp_path: Path) -> None:
    """The documented check: the family's defaults reach an average reward >= 900 in 300k steps."""
    args = ("--env=mujoco_pendulum", "--seed=1", "--train_for_env_steps=300000", "--device=cpu",
            f"--train_dir={tmp_path}", "--experiment=pendulum")  # fmt: skip
    result = run_module(TRAIN, *args, timeout=900)
    assert result.returncode == 0, result.explain()
    assert result.last_reward() is not None and result.last_reward() >= 900, result.explain()
