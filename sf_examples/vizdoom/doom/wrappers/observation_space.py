"""Render at another of ViZDoom's resolutions."""

from __future__ import annotations

import gymnasium as gym


class SetResolutionWrapper(gym.Wrapper):
    """Makes the game render at ``target_resolution`` ("WxH", one of ViZDoom's, e.g. "256x144"). Apply it directly
    to a ``VizdoomEnv`` that has not started: the observation space changes with it."""

    def __init__(self, env: gym.Env, target_resolution: str) -> None:
        core = env.unwrapped
        if env is not core:
            raise ValueError("SetResolutionWrapper must wrap the VizdoomEnv itself (before resizing wrappers)")
        if core.game is not None:
            raise ValueError("SetResolutionWrapper must be applied before the game starts (before the first reset)")
        core.options.resolution = target_resolution
        core.rebuild_spaces()
        super().__init__(env)
        self.observation_space = core.observation_space
