"""RecordingWrapper writes one folder of frames per episode, from render() or from image observations."""

from __future__ import annotations

import os

import gymnasium as gym
import imageio.v3 as iio
import numpy as np
import pytest
from gymnasium import spaces

from sample_factory.envs import recording
from sample_factory.envs.env_wrappers import RecordingWrapper

from .fake_envs import ScriptedEnv


class _RenderEnv(gym.Env):
    """Vector observations; render() gives a 5x7 RGB frame whose red channel is the step index."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, episode_len: int = 3, render_mode: str | None = "rgb_array") -> None:
        self.observation_space = spaces.Box(-1, 1, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.render_mode = render_mode
        self.episode_len, self.t = episode_len, 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 0.0, self.t >= self.episode_len, False, {}

    def render(self):
        frame = np.zeros((5, 7, 3), np.uint8)
        frame[..., 0] = self.t * 10
        return frame


def _run_episode(env: gym.Env) -> None:
    env.reset()
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(0)
        done = terminated or truncated


def test_frames_of_each_episode_go_to_their_own_folder(tmp_path):
    env = RecordingWrapper(_RenderEnv(episode_len=3), str(tmp_path), player_id=7)
    _run_episode(env)
    _run_episode(env)
    assert sorted(os.listdir(tmp_path)) == ["ep_0000_p7", "ep_0001_p7"]
    frames = sorted(os.listdir(tmp_path / "ep_0000_p7"))
    assert frames == ["00000.png", "00001.png", "00002.png", "00003.png"]  # reset + 3 steps
    last = iio.imread(tmp_path / "ep_0000_p7" / "00003.png")
    assert last.shape == (5, 7, 3) and last[0, 0, 0] == 30 and last[..., 1:].max() == 0


def test_existing_episode_folders_are_not_overwritten(tmp_path):
    (tmp_path / "ep_0000_p1").mkdir()
    env = RecordingWrapper(_RenderEnv(), str(tmp_path), player_id=1)
    env.reset()
    assert env.episode_dir == str(tmp_path / "ep_0001_p1")
    assert os.listdir(tmp_path / "ep_0000_p1") == []


def test_image_observation_recorded_when_render_gives_nothing(tmp_path):
    env = RecordingWrapper(ScriptedEnv(obs_shape=(3, 6, 8), terminate_at=2), str(tmp_path), player_id=0)  # CHW
    _run_episode(env)
    frame = iio.imread(tmp_path / "ep_0000_p0" / "00002.png")
    assert frame.shape == (6, 8, 3) and frame.max() == frame.min() == 2  # step index, transposed to HWC


def test_npy_frames_without_an_image_writer(tmp_path, monkeypatch):
    monkeypatch.setattr(recording, "_png_writer", lambda: None)
    env = RecordingWrapper(_RenderEnv(episode_len=1), str(tmp_path), player_id=2)
    _run_episode(env)
    assert sorted(os.listdir(tmp_path / "ep_0000_p2")) == ["00000.npy", "00001.npy"]
    assert np.load(tmp_path / "ep_0000_p2" / "00001.npy")[0, 0, 0] == 10


def test_env_without_images_records_nothing_and_warns(tmp_path, caplog):
    env = RecordingWrapper(_RenderEnv(render_mode=None), str(tmp_path), player_id=3)
    with caplog.at_level("WARNING"):
        _run_episode(env)
    assert os.listdir(tmp_path / "ep_0000_p3") == []
    assert "render_mode='rgb_array'" in caplog.text


@pytest.mark.parametrize(
    ("value", "shape"),
    [(np.zeros((4, 5, 1), np.uint8), (4, 5)), (np.ones((2, 3), np.float32), (2, 3)), (np.zeros(4), None)],
)
def test_as_image(value, shape):
    image = recording.as_image(value)
    assert (image is None) if shape is None else (image.shape == shape and image.dtype == np.uint8)
