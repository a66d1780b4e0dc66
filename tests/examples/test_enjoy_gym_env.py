"""``sample_factory.enjoy`` through ``sf_examples.enjoy_gym_env``: episodes, deterministic actions, video, errors."""

from __future__ import annotations

from pathlib import Path

import cv2
import gymnasium as gym
import pytest
from example_helpers import CommandResult, assert_trained, run_module, train_args

TRAIN = "sf_examples.train_gym_env"
ENJOY = "sf_examples.enjoy_gym_env"
EXPERIMENT = "cartpole"


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    train_dir = tmp_path_factory.mktemp("gym")
    args = train_args(train_dir, EXPERIMENT, "--env=CartPole-v1", "--serial_mode=True", "--num_workers=1")
    assert_trained(run_module(TRAIN, *args, "--num_envs_per_worker=4"))
    return train_dir


def _enjoy(train_dir: Path, *extra: str) -> CommandResult:
    return run_module(ENJOY, "--env=CartPole-v1", f"--train_dir={train_dir}", f"--experiment={EXPERIMENT}", *extra)


def test_enjoy_prints_episodes_and_averages(trained_dir: Path) -> None:
    result = _enjoy(trained_dir, "--no_render", "--max_num_episodes=2")
    assert result.returncode == 0, result.explain()
    assert result.output.count("Episode finished: reward=") == 2
    assert "Avg episode reward: " in result.output and "Avg episode length: " in result.output


def test_enjoy_deterministic_with_frame_limit(trained_dir: Path) -> None:
    result = _enjoy(trained_dir, "--no_render", "--eval_deterministic=True", "--max_num_frames=5")
    assert result.returncode == 0, result.explain()
    # a trained CartPole policy cannot drop the pole within 5 steps
    assert "No episode finished within the limits (5 env steps)" in result.output


def test_enjoy_saves_mp4_at_render_size(trained_dir: Path) -> None:
    result = _enjoy(trained_dir, "--save_video", "--video_frames=10")
    assert result.returncode == 0, result.explain()
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=0)
    height, width, _ = env.render().shape
    env.close()
    capture = cv2.VideoCapture(str(trained_dir / EXPERIMENT / "replay.mp4"))
    shapes = []
    ok, frame = capture.read()
    while ok:
        shapes.append(frame.shape)
        ok, frame = capture.read()
    capture.release()
    assert shapes == [(height, width, 3)] * 10


def test_enjoy_without_checkpoint_explains_how_to_train(tmp_path: Path) -> None:
    result = run_module(ENJOY, "--env=CartPole-v1", f"--train_dir={tmp_path}", "--experiment=missing", "--no_render")
    assert result.returncode == 1
    assert f"No checkpoint of policy 0 in the experiment folder {tmp_path / 'missing'}" in result.output
    assert f"python -m {TRAIN} --env=CartPole-v1 --experiment=missing" in result.output
