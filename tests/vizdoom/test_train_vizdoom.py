"""End to end: every VizDoom env trains briefly and exits leaving no engine, process or ViZDoom shared memory.

Default suite: doom_basic (serial and parallel), a two-agent doom_duel match, enjoy, ``--help``. Every other env
runs under ``-m slow``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from vizdoom_helpers import RunResult, run_module, run_python, train_args

from sf_examples.vizdoom.doom.scenarios import DOOM_SPECS

TRAIN = "sf_examples.vizdoom.train_vizdoom"
ENJOY = "sf_examples.vizdoom.enjoy_vizdoom"
THROUGHPUT = "sf_examples.sampler.random_policy_throughput"
FAST_ENVS = {"doom_basic", "doom_duel"}


def assert_trained(result: RunResult, min_samples: int = 1000) -> None:
    assert result.returncode == 0, result.explain()
    collected = result.collected()
    assert collected.get(0, 0) >= min_samples, f"collected {collected}\n{result.explain()}"


def _serial(tmp_path: Path, env: str, *extra: str, steps: int = 4000) -> RunResult:
    args = train_args(tmp_path, env, f"--env={env}", "--serial_mode=True", "--num_workers=1", *extra, steps=steps)
    return run_module(TRAIN, *args)


@pytest.fixture(scope="module")
def basic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One serial doom_basic run shared by the enjoy tests."""
    train_dir = tmp_path_factory.mktemp("doom_basic")
    assert_trained(_serial(train_dir, "doom_basic", "--num_envs_per_worker=2"))
    return train_dir


def test_basic_serial(basic_dir: Path) -> None:
    experiment = basic_dir / "doom_basic"
    assert list((experiment / "checkpoint_p0").glob("checkpoint_*.pth"))
    config = (experiment / "config.json").read_text()
    assert '"env_frameskip": 4' in config and '"res_w": 128' in config


def test_basic_parallel(tmp_path: Path) -> None:
    args = train_args(tmp_path, "basic_parallel", "--env=doom_basic", "--num_workers=2", "--num_envs_per_worker=2")
    result = run_module(TRAIN, *args)
    assert_trained(result)
    # the family's encoder wraps the library's conv net: trusted as library code (tests/model/test_family_models.py
    # runs it through every check), it trains channels-last without a start-up check
    assert "Learner: channels-last used (every module of the model is the library's own)" in result.output
    assert "passed the start-up check" not in result.output


def test_basic_parallel_with_a_user_view_encoder(tmp_path: Path) -> None:
    """A user's conv encoder that flattens with ``.view`` (the documented style) trains; channels-last is skipped."""
    args = train_args(tmp_path, "basic_view", "--env=doom_basic", "--num_workers=2", "--num_envs_per_worker=2")
    result = run_python(str(Path(__file__).parent / "doom_user_encoder_train.py"), *args)
    assert_trained(result)
    assert (
        "Learner: channels-last skipped for encoder DoomViewEncoder: its forward fails on NHWC tensors "
        "(RuntimeError: view size is not compatible" in result.output
    ), result.explain()


def test_duel_self_play_two_agents(tmp_path: Path) -> None:
    result = _serial(
        tmp_path, "doom_duel", "--num_agents=2", "--num_envs_per_worker=1", "--worker_num_splits=1", "--timelimit=0.05"
    )
    assert_trained(result)
    assert result.last_reward() is not None, "0.05-minute matches must finish and report episode rewards"


def test_enjoy_runs_episodes(basic_dir: Path) -> None:
    args = ("--env=doom_basic", f"--train_dir={basic_dir}", "--experiment=doom_basic", "--no_render")
    result = run_module(ENJOY, *args, "--max_num_episodes=2", "--fps=0")
    assert result.returncode == 0, result.explain()
    assert result.output.count("Episode finished: reward=") == 2


def test_help_shows_family_flags_and_defaults() -> None:
    result = run_module(TRAIN, "--env=doom_basic", "--help", timeout=60)
    assert result.returncode == 0, result.explain()
    for flag in ("--res_w", "--res_h", "--wide_aspect_ratio", "--num_bots", "--num_agents", "--timelimit"):
        assert flag in result.output
    assert re.search(r"--env_frameskip ENV_FRAMESKIP\s+Env frames.*?\(default:\s+4\)", result.output, re.S)


def test_unknown_doom_env_fails_before_starting() -> None:
    result = run_module(TRAIN, "--env=doom_nope", "--experiment=x", "--device=cpu", timeout=60)
    assert result.returncode == 1
    assert "doom_basic" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(set(DOOM_SPECS) - FAST_ENVS))
def test_every_env_trains_serial(tmp_path: Path, env: str) -> None:
    extra = (
        ["--num_envs_per_worker=1", "--worker_num_splits=1", "--timelimit=0.1"] if DOOM_SPECS[env].deathmatch else []
    )
    assert_trained(_serial(tmp_path, env, *extra))


@pytest.mark.slow
def test_enjoy_saves_video(basic_dir: Path) -> None:
    args = ("--env=doom_basic", f"--train_dir={basic_dir}", "--experiment=doom_basic", "--save_video")
    result = run_module(ENJOY, *args, "--video_frames=20", "--video_name=basic.mp4")
    assert result.returncode == 0, result.explain()
    assert (basic_dir / "doom_basic" / "basic.mp4").stat().st_size > 0


@pytest.mark.slow
def test_random_policy_throughput_of_benchmark() -> None:
    """The tool registers doom_* envs and applies the family's defaults itself: frameskip 4 without flags."""
    args = ("--env=doom_benchmark", "--num_workers=1", "--num_envs_per_worker=2", "--seconds=2")
    result = run_module(THROUGHPUT, *args)
    assert result.returncode == 0, result.explain()
    frames, agent_steps = map(int, re.search(r"(\d+) frames \((\d+) agent steps\)", result.output).groups())
    assert agent_steps > 0 and frames == 4 * agent_steps
