"""A user's env written for Sample Factory 2 with ``reset(self)`` (no seed, no options) works below every wrapper of
the library: each passes the seed and options on only where they were given and are accepted."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from sample_factory.envs import env_wrappers
from sample_factory.envs.env_contract import reset_env
from sample_factory.envs.recording import RecordingWrapper


class SeedlessImageEnv(gym.Env):
    """An env of an SF2-era project: its reset takes nothing."""

    observation_space = spaces.Box(0, 255, (8, 8, 3), np.uint8)
    action_space = spaces.Discrete(2)

    def reset(self):  # noqa: D102 - the point of the test: no seed, no options
        self.t = 0
        return np.full((8, 8, 3), 7, np.uint8), {}

    def step(self, action):
        self.t += 1
        return np.full((8, 8, 3), self.t, np.uint8), 1.0, self.t >= 3, False, {}


WRAPPERS = {
    "PixelFormatChwWrapper": lambda env: env_wrappers.PixelFormatChwWrapper(env),
    "ResizeWrapper": lambda env: env_wrappers.ResizeWrapper(env, 4, 4),
    "RewardScalingWrapper": lambda env: env_wrappers.RewardScalingWrapper(env, 0.5),
    "ClipRewardEnv": lambda env: env_wrappers.ClipRewardEnv(env),
    "TimeLimitWrapper": lambda env: env_wrappers.TimeLimitWrapper(env, 10),
    "RecordEpisodeStatistics": lambda env: env_wrappers.RecordEpisodeStatistics(env),
    "EpisodeCounterWrapper": lambda env: env_wrappers.EpisodeCounterWrapper(env),
    "ActionRepeatWrapper": lambda env: env_wrappers.ActionRepeatWrapper(env, 2),
    "MaxAndSkipEnv": lambda env: env_wrappers.MaxAndSkipEnv(env, 2),
}


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_a_seedless_env_resets_below_a_library_wrapper(name):
    env = WRAPPERS[name](SeedlessImageEnv())
    obs, info = reset_env(env, seed=3)
    assert np.asarray(obs).size > 0 and isinstance(info, dict)
    env.step(0)


def test_frame_stacking_still_stacks_the_first_observation(tmp_path):
    env = env_wrappers.StackFramesWrapper(env_wrappers.PixelFormatChwWrapper(SeedlessImageEnv()), 2)
    obs, _ = reset_env(env, seed=1)
    assert obs.shape == env.observation_space.shape and (obs == 7).all()
    recorded = RecordingWrapper(SeedlessImageEnv(), str(tmp_path), 0)
    obs, _ = reset_env(recorded, seed=1)
    assert (obs == 7).all()
