"""The custom env + custom encoder example: env rules, encoder registration, training (serial and parallel), enjoy."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from example_helpers import CommandResult, assert_trained, run_module, train_args

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.model_utils import get_rnn_size
from sf_examples.train_custom_env_custom_model import (
    CustomGridEncoder,
    GridGoalEnv,
    custom_env_override_defaults,
    register_custom_components,
)

TRAIN = "sf_examples.train_custom_env_custom_model"
ENJOY = "sf_examples.enjoy_custom_env_custom_model"
EXPERIMENT = "custom_serial"


# ---- env and model, in process ---------------------------------------------------------------------------------


def test_env_reaching_the_goal_terminates_with_reward() -> None:
    env = GridGoalEnv(grid_size=3, episode_len=20)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2, 3, 3) and obs[0].sum() == 1 and obs[1].sum() == 1
    env.agent, env.goal = np.array([0, 0]), np.array([0, 1])
    obs, reward, terminated, truncated, info = env.step(3)  # right
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["episode_extra_stats"]["reached_goal"] == 1.0


def test_env_truncates_at_episode_len() -> None:
    env = GridGoalEnv(grid_size=4, episode_len=3)
    env.reset(seed=1)
    env.agent, env.goal = np.array([0, 0]), np.array([3, 3])
    results = [env.step(0) for _ in range(3)]  # walk into the top wall: never reaches the goal
    assert [r[3] for r in results] == [False, False, True]
    assert all(r[1] == pytest.approx(-0.01) for r in results)
    assert results[-1][4]["episode_extra_stats"] == {"reached_goal": 0.0, "steps_taken": 3.0}


def test_registered_encoder_is_used_by_the_actor_critic(clean_context: None) -> None:
    register_custom_components()
    parser, _ = parse_sf_args(["--env=my_custom_env_v1"])
    custom_env_override_defaults(parser)
    cfg = parse_full_cfg(parser, ["--env=my_custom_env_v1"])
    env = GridGoalEnv(grid_size=5)
    model = create_actor_critic(cfg, env.observation_space, env.action_space)
    assert isinstance(model.encoder, CustomGridEncoder)
    obs = torch.as_tensor(env.reset(seed=0)[0]).unsqueeze(0)
    out = model(model.normalize_obs({"obs": obs}), torch.zeros(1, get_rnn_size(cfg)))
    assert out["actions"].shape == (1,) and out["values"].shape == (1,)


# ---- end to end ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One serial training run shared by the enjoy tests."""
    train_dir = tmp_path_factory.mktemp("custom_env")
    result = run_module(TRAIN, *train_args(train_dir, EXPERIMENT, "--serial_mode=True", "--num_workers=1"))
    assert_trained(result)
    return train_dir


def test_train_serial(trained_dir: Path) -> None:
    experiment = trained_dir / EXPERIMENT
    assert (experiment / "config.json").is_file()
    assert list((experiment / "checkpoint_p0").glob("checkpoint_*.pth"))


def test_train_parallel(tmp_path: Path) -> None:
    args = train_args(tmp_path, "custom_parallel", "--num_workers=2", "--num_envs_per_worker=2")
    assert_trained(run_module(TRAIN, *args, "--custom_env_grid_size=4"))
    assert list((tmp_path / "custom_parallel" / "checkpoint_p0").glob("checkpoint_*.pth"))


def _enjoy(train_dir: Path, *extra: str) -> CommandResult:
    return run_module(ENJOY, f"--train_dir={train_dir}", f"--experiment={EXPERIMENT}", *extra)


def test_enjoy_runs_episodes(trained_dir: Path) -> None:
    result = _enjoy(trained_dir, "--no_render", "--max_num_episodes=2")
    assert result.returncode == 0, result.explain()
    assert result.output.count("Episode finished: reward=") == 2
    assert "Avg episode reward: " in result.output and "Avg episode length: " in result.output


def test_enjoy_best_falls_back_to_latest(trained_dir: Path) -> None:
    result = _enjoy(trained_dir, "--no_render", "--max_num_episodes=1", "--load_checkpoint_kind=best")
    assert result.returncode == 0, result.explain()
    assert "loading the latest checkpoint instead" in result.output
    assert "Avg episode reward: " in result.output


def test_enjoy_saves_video_at_render_size(trained_dir: Path) -> None:
    result = _enjoy(trained_dir, "--save_video", "--video_frames=15", "--video_name=grid.mp4")
    assert result.returncode == 0, result.explain()
    env = GridGoalEnv(grid_size=5, render_mode="rgb_array")  # the size the experiment was trained with
    env.reset(seed=0)
    height, width, _ = env.render().shape
    frames = _decode(trained_dir / EXPERIMENT / "grid.mp4")
    assert len(frames) == 15
    assert all(frame.shape == (height, width, 3) for frame in frames)


def _decode(path: Path) -> list[np.ndarray]:
    assert path.is_file(), f"{path} was not written"
    capture = cv2.VideoCapture(str(path))
    frames = []
    ok, frame = capture.read()
    while ok:
        frames.append(frame)
        ok, frame = capture.read()
    capture.release()
    return frames


def test_enjoy_without_checkpoint_names_folder_and_train_command(tmp_path: Path) -> None:
    result = run_module(ENJOY, f"--train_dir={tmp_path}", "--experiment=never_trained", "--no_render")
    assert result.returncode != 0
    assert "No checkpoint" in result.output
    assert str(tmp_path / "never_trained") in result.output
    assert f"python -m {TRAIN} --env=my_custom_env_v1 --experiment=never_trained" in result.output
