"""Each wrapper on the scripted fake env."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from gymnasium import spaces

from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.envs.env_wrappers import (
    ActionRepeatWrapper,
    ClipRewardEnv,
    EpisodicLifeEnv,
    FireResetEnv,
    MaxAndSkipEnv,
    NoopResetEnv,
    NumpyObsWrapper,
    NumpyToTorchWrapper,
    PixelFormatChwWrapper,
    RecordEpisodeStatistics,
    ResizeWrapper,
    RewardScalingWrapper,
    StackFramesWrapper,
    TimeLimitWrapper,
)

from .fake_envs import ScriptedEnv

ATARI_ACTIONS = ["NOOP", "FIRE", "RIGHT", "LEFT"]


def hwc_image(t: int) -> np.ndarray:
    """A (4, 6, 3) image whose pixel (y, x, c) is 100*c + 10*y + x + t, so layouts are easy to check."""
    y, x, c = np.meshgrid(np.arange(4), np.arange(6), np.arange(3), indexing="ij")
    return (100 * c + 10 * y + x + t).astype(np.uint8)


class DictObsEnv(ScriptedEnv):
    def __init__(self) -> None:
        super().__init__(obs_fn=hwc_image)
        self.observation_space = spaces.Dict(
            {"obs": spaces.Box(0, 255, (4, 6, 3), np.uint8), "measurements": spaces.Box(-1, 1, (2,))}
        )

    def _obs(self):
        return {"obs": hwc_image(self.t), "measurements": np.array([0.5, -0.5], np.float32)}


def test_pixel_format_chw():
    env = PixelFormatChwWrapper(ScriptedEnv(obs_fn=hwc_image))
    assert env.observation_space.shape == (3, 4, 6)
    obs, _ = env.reset()
    assert obs.shape == (3, 4, 6) and obs.dtype == np.uint8
    assert obs[2, 1, 5] == 215
    assert obs.flags["C_CONTIGUOUS"]
    assert env.observation_space.contains(obs)


def test_pixel_format_chw_dict_obs_keeps_other_keys():
    env = PixelFormatChwWrapper(DictObsEnv())
    assert env.observation_space["obs"].shape == (3, 4, 6)
    assert env.observation_space["measurements"].shape == (2,)
    obs, *_ = env.step(0)
    assert obs["obs"][1, 2, 3] == 100 + 23 + 1
    np.testing.assert_array_equal(obs["measurements"], [0.5, -0.5])


def test_pixel_format_rejects_non_image():
    with pytest.raises(ValueError, match="HWC"):
        PixelFormatChwWrapper(ScriptedEnv(obs_shape=(5,)))


def test_resize_color_and_grayscale():
    big = lambda t: np.full((8, 12, 3), (30, 60, 90), np.uint8)  # noqa: E731
    env = ResizeWrapper(ScriptedEnv(obs_shape=(8, 12, 3), obs_fn=big), w=6, h=4)
    obs, _ = env.reset()
    assert obs.shape == (4, 6, 3) == env.observation_space.shape
    np.testing.assert_array_equal(obs[0, 0], [30, 60, 90])

    gray = ResizeWrapper(ScriptedEnv(obs_shape=(8, 12, 3), obs_fn=big), w=6, h=4, grayscale=True)
    obs, _ = gray.reset()
    assert obs.shape == (4, 6) == gray.observation_space.shape
    expected = round(0.299 * 30 + 0.587 * 60 + 0.114 * 90)
    assert abs(int(obs[0, 0]) - expected) <= 1


def test_resize_grayscale_channel_dim_and_area_interpolation():
    checker = lambda t: (np.indices((8, 8)).sum(axis=0) % 2 * 200).astype(np.uint8)[..., None].repeat(3, 2)  # noqa: E731
    env = ResizeWrapper(
        ScriptedEnv(obs_shape=(8, 8, 3), obs_fn=checker),
        w=4,
        h=4,
        grayscale=True,
        add_channel_dim=True,
        area_interpolation=True,
    )
    obs, _ = env.reset()
    assert obs.shape == (4, 4, 1) == env.observation_space.shape
    assert np.all(obs == 100)  # area averaging of a 0/200 checkerboard


def test_resize_without_opencv_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(MissingDependencyError, match="pip install opencv-python-headless"):
        ResizeWrapper(ScriptedEnv(), w=2, h=2)


def test_stack_frames_chw():
    env = StackFramesWrapper(PixelFormatChwWrapper(ScriptedEnv()), num_frames=3)
    assert env.observation_space.shape == (9, 4, 6)
    obs, _ = env.reset()
    assert obs.shape == (9, 4, 6) and np.all(obs == 0)
    env.step(0)
    obs, *_ = env.step(0)
    assert [int(obs[3 * i, 0, 0]) for i in range(3)] == [0, 1, 2]
    obs, *_ = env.step(0)
    assert [int(obs[3 * i, 0, 0]) for i in range(3)] == [1, 2, 3]
    obs, _ = env.reset()
    assert np.all(obs == 0), "reset must clear frames of the previous episode"
    assert env.observation_space.contains(obs)


def test_stack_frames_hw_gives_frame_axis():
    env = StackFramesWrapper(ScriptedEnv(obs_shape=(4, 6)), num_frames=2)
    env.reset()
    obs, *_ = env.step(0)
    assert obs.shape == (2, 4, 6) == env.observation_space.shape
    assert (obs[0, 0, 0], obs[1, 0, 0]) == (0, 1)


def test_reward_scaling_scalar_and_per_agent():
    env = RewardScalingWrapper(ScriptedEnv(rewards=[2.0, 4.0]), scale=0.5)
    env.reset()
    assert env.step(0)[1] == 1.0
    assert env.reward([2.0, -4.0]) == [1.0, -2.0]
    np.testing.assert_allclose(env.reward(np.array([2.0, 6.0])), [1.0, 3.0])


def test_reward_scaling_takes_sample_factory_2_name_positionally_or_by_keyword():
    by_keyword = RewardScalingWrapper(ScriptedEnv(rewards=[2.0]), scaling_factor=3.0)
    positional = RewardScalingWrapper(ScriptedEnv(rewards=[2.0]), 0.25)
    for env, expected in ((by_keyword, 6.0), (positional, 0.5)):
        env.reset()
        assert env.step(0)[1] == expected
    with pytest.raises(TypeError, match="scaling_factor"):
        RewardScalingWrapper(ScriptedEnv(), 2.0, scale=2.0)
    with pytest.raises(TypeError, match="scaling_factor"):
        RewardScalingWrapper(ScriptedEnv())


def test_clip_reward():
    env = ClipRewardEnv(ScriptedEnv(rewards=[5.0, -3.0, 0.25]), clip=1.0)
    env.reset()
    assert [env.step(0)[1] for _ in range(3)] == [1.0, -1.0, 0.25]
    assert env.reward([3.0, -0.5]) == [1.0, -0.5]
    with pytest.raises(ValueError, match="clip > 0"):
        ClipRewardEnv(ScriptedEnv(), clip=0)


def test_time_limit_truncates():
    env = TimeLimitWrapper(ScriptedEnv(), limit=3)
    env.reset()
    dones = [env.step(0)[2:4] for _ in range(3)]
    assert dones == [(False, False), (False, False), (False, True)]
    env.reset()
    assert env.step(0)[3] is False


def test_time_limit_termination_wins_over_truncation():
    env = TimeLimitWrapper(ScriptedEnv(terminate_at=2), limit=2)
    env.reset()
    env.step(0)
    _, _, terminated, truncated, _ = env.step(0)
    assert terminated and not truncated


def test_time_limit_random_variation_is_bounded_and_seeded():
    def episode_lengths(seed):
        env = TimeLimitWrapper(ScriptedEnv(), limit=10, random_variation_steps=3)
        lengths = []
        for episode in range(20):
            env.reset(seed=seed if episode == 0 else None)
            steps = 1
            while not env.step(0)[3]:
                steps += 1
            lengths.append(steps)
        return lengths

    lengths = episode_lengths(seed=7)
    assert all(7 <= n <= 13 for n in lengths) and len(set(lengths)) > 1
    assert lengths == episode_lengths(seed=7)


def test_numpy_obs_wrapper_converts_tensors_and_lists():
    env = NumpyObsWrapper(ScriptedEnv())
    out = env.observation({"a": torch.tensor([1.0, 2.0]), "b": [1, 2, 3]})
    assert isinstance(out["a"], np.ndarray) and isinstance(out["b"], np.ndarray)
    np.testing.assert_array_equal(out["a"], [1.0, 2.0])


def test_numpy_to_torch_wrapper():
    env = NumpyToTorchWrapper(ScriptedEnv(rewards=[0.5], terminate_at=1))
    obs, _ = env.reset()
    assert isinstance(obs, torch.Tensor) and obs.shape == (4, 6, 3)
    obs, reward, terminated, truncated, _ = env.step(torch.tensor(2))
    assert isinstance(env.unwrapped.actions[-1], np.ndarray) and int(env.unwrapped.actions[-1]) == 2
    assert reward.dtype == torch.float32 and float(reward) == 0.5
    assert terminated.dtype == torch.bool and bool(terminated) and not bool(truncated)


def test_record_episode_statistics():
    env = RecordEpisodeStatistics(ScriptedEnv(rewards=[1.0, 2.0, 3.0, 4.0], terminate_at=3))
    env.reset()
    infos = [env.step(0)[4] for _ in range(3)]
    assert "episode" not in infos[0] and "episode" not in infos[1]
    assert infos[2]["episode"] == {"r": 6.0, "l": 3}


def test_noop_reset_takes_noops():
    inner = ScriptedEnv(action_meanings=ATARI_ACTIONS)
    env = NoopResetEnv(inner, noop_max=5)
    counts = set()
    for seed in range(10):
        inner.actions.clear()
        env.reset(seed=seed)
        assert 1 <= len(inner.actions) <= 5 and set(inner.actions) == {0}
        counts.add(len(inner.actions))
    assert len(counts) > 1


def test_noop_reset_checks_action_meaning():
    with pytest.raises(ValueError, match="NOOP"):
        NoopResetEnv(ScriptedEnv(action_meanings=["FIRE", "NOOP"]))


def test_max_and_skip_pools_and_counts_frames():
    flicker = lambda t: np.full((2, 2), 200 if t % 2 else 50, np.uint8) + t  # noqa: E731
    env = MaxAndSkipEnv(ScriptedEnv(obs_shape=(2, 2), obs_fn=flicker, rewards=[1.0, 2.0, 3.0, 4.0, 5.0]), skip=4)
    env.reset()
    obs, reward, terminated, _, info = env.step(1)
    assert reward == 10.0 and not terminated
    assert info["num_frames"] == 4
    assert np.all(obs == 203)  # frame 3 is bright (203), frame 4 dark (54): the max keeps the bright one
    assert env.unwrapped.actions == [1, 1, 1, 1]


def test_max_and_skip_stops_at_episode_end():
    env = MaxAndSkipEnv(ScriptedEnv(terminate_at=2), skip=4)
    env.reset()
    _, reward, terminated, _, info = env.step(0)
    assert terminated and reward == 2.0 and info["num_frames"] == 2


def test_episodic_life_terminates_on_life_loss_but_resets_only_on_game_over():
    inner = ScriptedEnv(lives=[3, 3, 2, 2, 2, 1, 1, 0], terminate_at=7)
    env = EpisodicLifeEnv(inner)
    env.reset()
    assert env.step(0)[2] is False
    assert env.step(0)[2] is True  # lives 3 -> 2
    env.reset()
    assert inner.resets == 1, "a lost life must not reset the game"
    assert inner.t == 3  # the no-op step continues the game
    assert env.step(0)[2] is False
    assert env.step(0)[2] is True  # lives 2 -> 1
    env.reset()
    assert inner.resets == 1 and inner.t == 6
    assert env.step(0)[2] is True  # game over
    env.reset()
    assert inner.resets == 2 and inner.t == 0


def test_fire_reset_presses_fire():
    inner = ScriptedEnv(action_meanings=ATARI_ACTIONS)
    env = FireResetEnv(inner)
    obs, _ = env.reset()
    assert inner.actions == [1, 2]
    assert np.all(obs == 2)


def test_fire_reset_checks_action_meanings():
    with pytest.raises(ValueError, match="FIRE"):
        FireResetEnv(ScriptedEnv(action_meanings=["NOOP", "UP", "DOWN"]))


def test_action_repeat_sums_rewards_keeps_the_last_obs_and_counts_frames():
    env = ActionRepeatWrapper(ScriptedEnv(obs_shape=(3,), rewards=[1.0, 2.0, 3.0, 4.0]), repeat=3)
    env.reset()
    obs, reward, terminated, _, info = env.step(2)
    assert reward == 6.0 and not terminated and info["num_frames"] == 3
    assert np.all(obs == 3)  # the third frame's obs, not a max or a stack
    assert env.unwrapped.actions == [2, 2, 2]


def test_action_repeat_stops_at_episode_end():
    env = ActionRepeatWrapper(ScriptedEnv(obs_shape=(3,), terminate_at=2), repeat=4)
    env.reset()
    _, reward, terminated, _, info = env.step(0)
    assert terminated and reward == 2.0 and info["num_frames"] == 2


def test_action_repeat_needs_a_positive_count():
    with pytest.raises(ValueError, match="repeat >= 1"):
        ActionRepeatWrapper(ScriptedEnv(), repeat=0)
