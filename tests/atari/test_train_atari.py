"""End to end: Atari games train (parallel runner, one worker), enjoy writes an MP4, eval writes its CSV.

Default suite: atari_breakout trains, enjoy/eval/--help/the throughput tool. The other required games train
under ``-m slow``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import sf_run
from sf_run import RunResult
from test_atari_env import REQUIRED

TRAIN = "sf_examples.atari.train_atari"
ENJOY = "sf_examples.atari.enjoy_atari"
THROUGHPUT = "sf_examples.sampler.random_policy_throughput"
STEPS = 2000


def run_module(module: str, *args: str, timeout: float = 240.0) -> RunResult:
    return sf_run.run_module(module, list(args), timeout)


def train(train_dir: Path, env: str, *extra: str, steps: int = STEPS) -> RunResult:
    """A short parallel run with one worker; ``--train_for_env_steps`` counts frames (4 per agent step)."""
    flags = dict(batch_size=64, num_batches_per_epoch=1, num_epochs=1)
    return run_module(TRAIN, *sf_run.short_run_args(train_dir, env, steps, *extra, **flags))


@pytest.fixture(scope="module")
def breakout_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    train_dir = tmp_path_factory.mktemp("atari")
    train(train_dir, "atari_breakout").assert_trained(STEPS)
    return train_dir


def test_breakout_trains_with_atari_defaults(breakout_dir: Path) -> None:
    experiment = breakout_dir / "atari_breakout"
    assert list((experiment / "checkpoint_p0").glob("checkpoint_*.pth"))
    config = (experiment / "config.json").read_text()
    assert '"encoder_conv_architecture": "convnet_atari"' in config and '"env_framestack": 4' in config
    assert '"reward_clip": 1.0' in config


@pytest.mark.slow
@pytest.mark.parametrize("env", [name for name in REQUIRED if name != "atari_breakout"])
def test_required_game_trains(tmp_path: Path, env: str) -> None:
    train(tmp_path, env).assert_trained(STEPS)


def test_enjoy_writes_mp4(breakout_dir: Path) -> None:
    args = ("--env=atari_breakout", f"--train_dir={breakout_dir}", "--experiment=atari_breakout", "--save_video")
    result = run_module(ENJOY, *args, "--video_frames=40", "--max_num_episodes=1", "--video_name=replay.mp4")
    assert result.returncode == 0, result.explain()
    assert (breakout_dir / "atari_breakout" / "replay.mp4").stat().st_size > 1000, result.explain()


def test_eval_writes_csv_of_whole_games(breakout_dir: Path) -> None:
    experiment = breakout_dir / "atari_breakout"
    args = ("--env=atari_breakout", f"--train_dir={breakout_dir}", "--experiment=atari_breakout")
    result = run_module("sample_factory.eval", *args, "--max_num_episodes=2")
    assert result.returncode == 0, result.explain()
    with open(experiment / "eval_results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    # a whole game: every row carries the game's stats, and the summed reward is the game's raw score
    assert all(float(row["reward"]) == float(row["game_score"]) for row in rows)


def test_help_shows_family_flags_and_defaults() -> None:
    result = run_module(TRAIN, "--env=atari_pong", "--help", timeout=60)
    assert result.returncode == 0, result.explain()
    assert "--atari_episodic_life" in result.output and "--atari_repeat_action_probability" in result.output
    assert re.search(r"--encoder_conv_architecture .*?\(default:\s+convnet_atari\)", result.output, re.S)


def test_unknown_env_fails_before_starting() -> None:
    result = run_module(TRAIN, "--env=atari_brekout", "--experiment=x", "--device=cpu", timeout=60)
    assert result.returncode == 1
    assert "atari_breakout" in result.output


def test_random_policy_throughput_counts_skipped_frames() -> None:
    args = ("--env=atari_breakout", "--num_workers=1", "--num_envs_per_worker=2", "--seconds=2")
    result = run_module(THROUGHPUT, *args, timeout=120)
    assert result.returncode == 0, result.explain()
    frames, agent_steps = map(int, re.search(r"(\d+) frames \((\d+) agent steps\)", result.output).groups())
    # 4 frames per step, fewer only for the step that ends a game early (info["num_frames"])
    assert agent_steps > 0 and 3.5 * agent_steps < frames <= 4 * agent_steps
