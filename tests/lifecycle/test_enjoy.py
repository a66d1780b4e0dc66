"""``sample_factory.enjoy.make_env``: the evaluation env, made from the config as instance 0, used by ``enjoy``."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from lifecycle_helpers import captured_log, eval_cfg, fake_experiment

import sample_factory.enjoy as enjoy_module
from sample_factory.enjoy import enjoy, make_env
from sample_factory.envs.env_utils import register_env
from sf_examples.gym.gym_utils import register_gym_env

RECORDING_ENV = "enjoy_make_env_recording"


class _RecordingEnv(gym.Env):
    """A two-step episode; remembers how its make function was called."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}
    calls: list[tuple] = []

    def __init__(self, full_env_name: str, cfg, env_config, render_mode: str | None) -> None:
        self.calls.append((full_env_name, cfg, env_config, render_mode))
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.render_mode = render_mode
        self.t = 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(3, 0.5, np.float32), 1.0, self.t >= 2, False, {}

    def render(self):
        return np.zeros((4, 6, 3), np.uint8)


def _register_recording_env() -> None:
    _RecordingEnv.calls.clear()
    register_env(
        RECORDING_ENV, lambda name, cfg, env_config, render_mode: _RecordingEnv(name, cfg, env_config, render_mode)
    )


def test_make_env_calls_the_registered_factory_as_instance_zero(tmp_path: Path) -> None:
    _register_recording_env()
    cfg = eval_cfg(RECORDING_ENV, tmp_path, "x")
    env = make_env(cfg, render_mode="rgb_array")
    ((name, passed_cfg, env_config, render_mode),) = _RecordingEnv.calls
    assert (name, passed_cfg, render_mode) == (RECORDING_ENV, cfg, "rgb_array")
    assert (env_config.worker_index, env_config.vector_index, env_config.env_id) == (0, 0, 0)
    assert env.render().shape == (4, 6, 3)
    make_env(cfg)
    assert _RecordingEnv.calls[-1][3] is None  # no rendering unless asked for


def test_make_env_gives_a_working_cartpole(tmp_path: Path) -> None:
    register_gym_env("CartPole-v1")
    env = make_env(eval_cfg("CartPole-v1", tmp_path, "x"), render_mode="rgb_array")
    try:
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and reward == 1.0
        frame = env.render()
        assert frame.ndim == 3 and frame.shape[2] == 3
    finally:
        env.close()


def test_enjoy_makes_its_env_through_make_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _register_recording_env()
    probe = _RecordingEnv("probe", None, None, None)
    fake_experiment(tmp_path, "rec", RECORDING_ENV, probe.observation_space, probe.action_space, use_rnn=False)
    seen: list[str | None] = []

    def spying_make_env(cfg, render_mode=None):
        seen.append(render_mode)
        return make_env(cfg, render_mode)

    monkeypatch.setattr(enjoy_module, "make_env", spying_make_env)
    with captured_log() as logs:
        status, avg_reward = enjoy(eval_cfg(RECORDING_ENV, tmp_path, "rec", "--no_render", "--max_num_episodes=2"))
    assert status == 0, logs.text()
    assert seen == [None]  # --no_render: the env is made without a render mode
    assert avg_reward == 2.0  # two-step episodes paying 1 per step


def test_push_to_hub_without_a_repository_is_refused_before_any_episode(tmp_path: Path) -> None:
    cfg = eval_cfg("CartPole-v1", tmp_path, "anything", "--push_to_hub")
    with captured_log() as logged:
        status, reward = enjoy(cfg)
    assert status == 1 and np.isnan(reward)
    assert "--push_to_hub needs --hf_repository=USER/REPO" in logged.text()
    assert "No checkpoint" not in logged.text()  # refused before the experiment is even looked at


def test_hf_repository_without_push_to_hub_is_reported(tmp_path: Path) -> None:
    with captured_log() as logged:
        enjoy(eval_cfg(RECORDING_ENV, tmp_path, "missing", "--hf_repository=me/cartpole"))
    assert "--hf_repository only takes effect with --push_to_hub" in logged.text()


def test_video_name_in_a_missing_sub_folder_is_written_there(tmp_path: Path) -> None:
    _register_recording_env()
    probe = _RecordingEnv("probe", None, None, None)
    fake_experiment(tmp_path, "vid", RECORDING_ENV, probe.observation_space, probe.action_space, use_rnn=False)
    flags = ("--save_video", "--video_name=clips/first.mp4", "--max_num_episodes=2")
    with captured_log() as logged:
        status, _ = enjoy(eval_cfg(RECORDING_ENV, tmp_path, "vid", *flags))
    assert status == 0, logged.text()
    video = tmp_path / "vid" / "clips" / "first.mp4"
    assert video.is_file() and video.stat().st_size > 0
    assert f"Saved a video of 5 frames to {video}" in logged.text()  # reset frame + 2 episodes of 2 steps


def test_a_video_that_cannot_be_written_is_reported_as_an_error(tmp_path: Path) -> None:
    pytest.importorskip("cv2")
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    recorder = enjoy_module.VideoRecorder(str(blocker / "video.mp4"), fps=10, max_frames=100)
    with captured_log() as logged:
        recorder.add(np.zeros((4, 6, 3), np.uint8))
        recorder.add(np.zeros((4, 6, 3), np.uint8))
        recorder.close()
    assert "No video recorded" in logged.text() and "Saved a video" not in logged.text()
    assert logged.text().count("No video recorded") == 1
    assert recorder.full()  # enjoy stops instead of running on for a video that cannot be written


def test_a_writer_that_does_not_open_is_reported_as_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cv2 = pytest.importorskip("cv2")

    class ClosedWriter:  # what OpenCV returns when it cannot write the file: no exception, isOpened() is False
        def __init__(self, *args) -> None:
            self.released = False

        def isOpened(self) -> bool:  # noqa: N802 (OpenCV's name)
            return False

        def release(self) -> None:
            self.released = True

        def write(self, frame) -> None:
            raise AssertionError("must not write to a writer that did not open")

    monkeypatch.setattr(cv2, "VideoWriter", ClosedWriter)
    recorder = enjoy_module.VideoRecorder(str(tmp_path / "video.mp4"), fps=10, max_frames=100)
    with captured_log() as logged:
        recorder.add(np.zeros((4, 6, 3), np.uint8))
        recorder.close()
    assert "No video recorded" in logged.text() and "OpenCV cannot open it" in logged.text()
    assert "Saved a video" not in logged.text()
