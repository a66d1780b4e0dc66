"""End to end on NLE: nethack_challenge trains on the CPU, enjoy replays the checkpoint, the fast eval writes its
CSV, the random-policy sampler runs; under ``-m slow``, the score of a short run rises."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import sf_run
from nethack_fakes import requires_nle
from sf_run import RunResult

pytestmark = requires_nle

TRAIN = "sf_examples.nethack.train_nethack"
ENJOY = "sf_examples.nethack.enjoy_nethack"
EVAL = "sf_examples.nethack.fast_eval_nethack"
SAMPLE_ENV = "sf_examples.nethack.scripts.sample_env"
STEPS = 512
# a small ChaoticDwarvenGPT5 and short episodes, so a CPU run takes seconds
SMALL = dict(
    model="ChaoticDwarvenGPT5", h_dim=32, rnn_size=32, crop_dim=12, batch_size=64, max_episode_steps=100,
    worker_num_splits=1,
)  # fmt: skip


def run_module(module: str, *args: str, timeout: float = 300.0) -> RunResult:
    return sf_run.run_module(module, list(args), timeout)


@pytest.fixture(scope="module")
def challenge_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    train_dir = tmp_path_factory.mktemp("nethack")
    result = run_module(TRAIN, *sf_run.short_run_args(train_dir, "nethack_challenge", STEPS, **SMALL))
    result.assert_trained(STEPS)
    return train_dir


def watch_args(train_dir: Path) -> list[str]:
    return ["--env=nethack_challenge", f"--train_dir={train_dir}", "--experiment=nethack_challenge", "--device=cpu"]


def test_challenge_trains_with_the_family_defaults(challenge_dir: Path) -> None:
    experiment = challenge_dir / "nethack_challenge"
    assert list((experiment / "checkpoint_p0").glob("checkpoint_*.pth"))
    config = (experiment / "config.json").read_text()
    assert '"model": "ChaoticDwarvenGPT5"' in config and '"character": "mon-hum-neu-mal"' in config
    assert '"gamma": 0.999' in config and '"normalize_input": false' in config


def test_enjoy_replays_the_checkpoint(challenge_dir: Path) -> None:
    result = run_module(ENJOY, *watch_args(challenge_dir), "--no_render", "--max_num_episodes=1")
    assert result.returncode == 0, result.explain()
    assert "Loaded experiment state" in result.output or "checkpoint" in result.output.lower(), result.explain()


def test_fast_eval_writes_one_row_per_episode_with_task_scores(challenge_dir: Path) -> None:
    args = (*watch_args(challenge_dir), "--sample_env_episodes=2", "--num_workers=1", "--num_envs_per_worker=2")
    result = run_module(EVAL, *args)
    assert result.returncode == 0, result.explain()
    with open(challenge_dir / "nethack_challenge" / "eval_results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    assert all(float(row["turns"]) >= 1 and float(row["scout_score"]) >= 0 for row in rows)


def test_sample_env_measures_random_policy_throughput() -> None:
    args = ("--env=nethack_score", "--num_workers=1", "--num_envs_per_worker=2", "--seconds=2")
    result = run_module(SAMPLE_ENV, *args, "--add_image_observation=False", timeout=120)
    assert result.returncode == 0, result.explain()
    fps = float(re.search(r"Sampling throughput FPS: ([0-9.]+)", result.output).group(1))
    assert fps > 0


def test_help_shows_family_flags_and_defaults() -> None:
    result = run_module(TRAIN, "--env=nethack_challenge", "--help", timeout=60)
    assert result.returncode == 0, result.explain()
    assert "--character" in result.output and "--crop_dim" in result.output and "--exp_tags" in result.output
    assert re.search(r"--model .*?\(default:\s+ChaoticDwarvenGPT5\)", result.output, re.S)


def test_unknown_env_fails_before_starting(tmp_path: Path) -> None:
    result = run_module(TRAIN, "--env=nethack_chalenge", "--experiment=x", f"--train_dir={tmp_path}", timeout=60)
    assert result.returncode == 1
    assert "nethack_challenge" in result.output and not (tmp_path / "x").exists()


# what the learning check trains: exploring (nethack_scout, reward = newly seen map cells) with a small ScaledNet,
# 200-step episodes and the PPO settings that learn fastest on two CPU cores (docs/nethack.md, measured)
LEARN = dict(
    model="ScaledNet", add_image_observation=False, use_crop=True, crop_dim=9, h_dim=64, msg_hdim=16,
    blstats_hdim=32, fc_after_cnn_hdim=64, num_fc_layers=1, use_rnn=False, recurrence=1, char_edim=8, color_edim=4,
    screen_conv_blocks=1, learning_rate=0.0003, exploration_loss_coeff=0.01, gamma=0.99, gae_lambda=0.95,
    max_episode_steps=200, num_workers=2, num_envs_per_worker=8, batch_size=512, worker_num_splits=2,
)  # fmt: skip


@pytest.mark.slow
def test_exploration_score_rises(tmp_path: Path) -> None:
    result = run_module(TRAIN, *sf_run.short_run_args(tmp_path, "nethack_scout", 60000, **LEARN), timeout=900)
    result.assert_trained(60000)
    rewards = [float(r) for r in re.findall(r"Avg episode reward: \[\(0, '(-?[0-9.]+)'\)", result.output)]
    assert len(rewards) > 10, result.explain()
    early, late = rewards[: len(rewards) // 5], rewards[-len(rewards) // 5 :]
    assert sum(late) / len(late) > 1.05 * sum(early) / len(early), rewards
