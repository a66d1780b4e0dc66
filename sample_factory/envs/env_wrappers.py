"""Gymnasium wrappers that RL envs commonly need before they reach Sample Factory.

All wrappers follow the Gymnasium 1.x API (``reset(seed=None, options=None) -> (obs, info)``,
``step(action) -> (obs, reward, terminated, truncated, info)``). Image wrappers accept a ``Box`` observation
space or a ``Dict`` space whose ``"obs"`` entry is the image, so envs with extra measurement inputs can use them.
Reward wrappers also accept per-agent reward lists/arrays of multi-agent envs.

Typical pixel pipeline: ``ResizeWrapper`` (HWC) -> ``PixelFormatChwWrapper`` -> ``StackFramesWrapper`` (CHW).
Typical Atari pipeline: ``NoopResetEnv`` -> ``MaxAndSkipEnv`` -> ``RecordEpisodeStatistics`` -> ``EpisodicLifeEnv``
-> ``FireResetEnv`` -> ``ClipRewardEnv``; statistics go before ``EpisodicLifeEnv`` so they count whole games.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from sample_factory.envs.env_contract import reset_inner
from sample_factory.envs.env_utils import MissingDependencyError

# recording has its own module (image writers, folder layout); re-exported as Sample Factory 2 scripts import it here
from sample_factory.envs.recording import RecordingWrapper as RecordingWrapper

Obs = Any
StepResult = tuple[Obs, Any, bool, bool, dict[str, Any]]
IMAGE_KEY = "obs"


def _map_reward(reward: Any, func: Callable[[Any], Any]) -> Any:
    """Apply ``func`` to a scalar reward, an array of rewards, or each element of a per-agent list."""
    if isinstance(reward, (list, tuple)):
        return [func(r) for r in reward]
    return func(reward)


def has_image_observations(observation_space: gym.Space) -> bool:
    """True when the observations are images: a 3-D Box (``[C, H, W]`` or ``[H, W, C]``), alone or as ``Dict["obs"]``.

    Env factories use it to decide whether image wrappers (resizing, channel reordering) apply.
    """
    if isinstance(observation_space, spaces.Dict):
        observation_space = observation_space.spaces.get(IMAGE_KEY)
    return isinstance(observation_space, spaces.Box) and len(observation_space.shape) == 3


class ResetsThrough:
    """Mixed into the library's wrappers (before the gymnasium base): ``reset`` passes ``seed`` and ``options`` on only
    where they were given and the wrapped env's ``reset`` accepts them, so a user's env or wrapper written for Sample
    Factory 2 with ``reset(self)`` works below them; an observation wrapper still transforms the first observation.
    """

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict]:
        obs, info = reset_inner(self.env, seed, options)
        if isinstance(self, gym.ObservationWrapper):
            obs = self.observation(obs)
        return obs, info


class _ImageObservationWrapper(ResetsThrough, gym.ObservationWrapper):
    """Base for wrappers that transform an image; finds the image in a Box space or in ``Dict["obs"]``."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if isinstance(space, spaces.Dict):
            if IMAGE_KEY not in space.spaces:
                raise ValueError(
                    f"{type(self).__name__} needs the image under key {IMAGE_KEY!r} of the Dict observation space, "
                    f"found keys {list(space.spaces)}; rename the image entry to {IMAGE_KEY!r}"
                )
            new_spaces = dict(space.spaces)
            new_spaces[IMAGE_KEY] = self._convert_space(space[IMAGE_KEY])
            self.observation_space = spaces.Dict(new_spaces)
        elif isinstance(space, spaces.Box):
            self.observation_space = self._convert_space(space)
        else:
            raise TypeError(f"{type(self).__name__} needs a Box or Dict observation space, got {space}")

    def observation(self, observation: Obs) -> Obs:
        if isinstance(observation, dict):
            converted = dict(observation)
            converted[IMAGE_KEY] = self._convert_image(observation[IMAGE_KEY])
            return converted
        return self._convert_image(observation)

    def _convert_space(self, space: spaces.Box) -> spaces.Box:
        raise NotImplementedError

    def _convert_image(self, image: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class PixelFormatChwWrapper(_ImageObservationWrapper):
    """HWC images -> CHW, the layout torch convolutions expect; dtype (usually uint8) is kept."""

    def _convert_space(self, space: spaces.Box) -> spaces.Box:
        if len(space.shape) != 3:
            raise ValueError(f"PixelFormatChwWrapper needs HWC images (3 dims), got shape {space.shape}")
        return spaces.Box(space.low.transpose(2, 0, 1), space.high.transpose(2, 0, 1), dtype=space.dtype)

    def _convert_image(self, image: np.ndarray) -> np.ndarray:
        # contiguous so downstream torch.from_numpy/copies see a plain array, not a strided view
        return np.ascontiguousarray(np.transpose(image, (2, 0, 1)))


def _import_cv2() -> Any:
    try:
        import cv2
    except ImportError as exc:
        raise MissingDependencyError(
            f"ResizeWrapper needs OpenCV, which is not installed ({exc}). "
            "Install it with: pip install opencv-python-headless"
        ) from exc
    return cv2


class ResizeWrapper(_ImageObservationWrapper):
    """Resize HWC (or HW) images to ``h x w``, optionally grayscale: smaller inputs make sampling and training cheaper.

    Output shape: ``(h, w, c)`` for colour, ``(h, w)`` for grayscale or ``(h, w, 1)`` with ``add_channel_dim``.
    Nearest-neighbour interpolation is the fast default; ``area_interpolation`` gives smoother downscaling.
    """

    def __init__(
        self,
        env: gym.Env,
        w: int,
        h: int,
        grayscale: bool = False,
        add_channel_dim: bool = False,
        area_interpolation: bool = False,
    ) -> None:
        self._cv2 = _import_cv2()
        self.w, self.h = w, h
        self.grayscale, self.add_channel_dim = grayscale, add_channel_dim
        self._interpolation = self._cv2.INTER_AREA if area_interpolation else self._cv2.INTER_NEAREST
        self._out_shape: tuple[int, ...] = ()
        super().__init__(env)

    def _convert_space(self, space: spaces.Box) -> spaces.Box:
        if len(space.shape) not in (2, 3):
            raise ValueError(f"ResizeWrapper needs HWC or HW images, got shape {space.shape}")
        channels = 1 if (self.grayscale or len(space.shape) == 2) else space.shape[2]
        if self.grayscale or len(space.shape) == 2:
            self._out_shape = (self.h, self.w, 1) if self.add_channel_dim else (self.h, self.w)
        else:
            self._out_shape = (self.h, self.w, channels)
        low, high = float(np.min(space.low)), float(np.max(space.high))
        return spaces.Box(low, high, shape=self._out_shape, dtype=space.dtype)

    def _convert_image(self, image: np.ndarray) -> np.ndarray:
        cv2 = self._cv2
        if self.grayscale and image.ndim == 3 and image.shape[2] == 3:
            image = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
        elif self.grayscale and image.ndim == 3:
            image = image[:, :, 0]
        resized = cv2.resize(image, (self.w, self.h), interpolation=self._interpolation)
        # cv2 drops a trailing channel of size 1, so restore the declared shape explicitly
        return resized.reshape(self._out_shape)


class StackFramesWrapper(_ImageObservationWrapper):
    """Stack the last ``num_frames`` CHW frames along the channel axis to give feed-forward models motion cues.

    CHW input ``(c, h, w)`` gives ``(c * num_frames, h, w)``; HW input gives ``(num_frames, h, w)``.
    After reset the stack is filled with copies of the first frame.
    """

    def __init__(self, env: gym.Env, num_frames: int) -> None:
        if num_frames < 1:
            raise ValueError(f"StackFramesWrapper needs num_frames >= 1, got {num_frames}")
        self.num_frames = num_frames
        self._frames: deque[np.ndarray] = deque(maxlen=num_frames)
        super().__init__(env)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict]:
        self._frames.clear()
        return super().reset(seed=seed, options=options)

    def _convert_space(self, space: spaces.Box) -> spaces.Box:
        if len(space.shape) not in (2, 3):
            raise ValueError(f"StackFramesWrapper needs CHW or HW frames, got shape {space.shape}")
        low, high = self._stack([space.low] * self.num_frames), self._stack([space.high] * self.num_frames)
        return spaces.Box(low, high, dtype=space.dtype)

    def _convert_image(self, image: np.ndarray) -> np.ndarray:
        if not self._frames:
            self._frames.extend([image] * (self.num_frames - 1))
        self._frames.append(image)
        return self._stack(list(self._frames))

    @staticmethod
    def _stack(frames: list[np.ndarray]) -> np.ndarray:
        return np.stack(frames) if frames[0].ndim == 2 else np.concatenate(frames, axis=0)


class RewardScalingWrapper(ResetsThrough, gym.RewardWrapper):
    """Multiply rewards by ``scaling_factor`` so value targets stay in a range the critic learns easily.

    ``scale`` is the older name of ``scaling_factor``, still accepted; give one of them.
    """

    def __init__(self, env: gym.Env, scaling_factor: float | None = None, *, scale: float | None = None) -> None:
        if (scaling_factor is None) == (scale is None):
            raise TypeError("RewardScalingWrapper needs the reward multiplier as scaling_factor (or its alias scale)")
        super().__init__(env)
        self.scaling_factor = scaling_factor if scaling_factor is not None else scale

    def reward(self, reward: Any) -> Any:
        return _map_reward(reward, lambda r: r * self.scaling_factor)


class ClipRewardEnv(ResetsThrough, gym.RewardWrapper):
    """Clip rewards to ``[-clip, clip]`` so games with very different score scales train with one set of flags."""

    def __init__(self, env: gym.Env, clip: float = 1.0) -> None:
        if clip <= 0:
            raise ValueError(f"ClipRewardEnv needs clip > 0, got {clip}")
        super().__init__(env)
        self.clip = clip

    def reward(self, reward: Any) -> Any:
        return _map_reward(reward, lambda r: np.clip(r, -self.clip, self.clip))


class TimeLimitWrapper(gym.Wrapper):
    """End episodes after ``limit`` steps with ``truncated=True`` (values are bootstrapped, unlike at a terminal).

    ``random_variation_steps`` draws each episode's limit from ``limit +- variation`` so that parallel envs do not
    all reset at the same step.
    """

    def __init__(self, env: gym.Env, limit: int, random_variation_steps: int = 0) -> None:
        if limit < 1 or random_variation_steps < 0 or random_variation_steps >= limit:
            raise ValueError(
                f"TimeLimitWrapper needs limit >= 1 and 0 <= random_variation_steps < limit, "
                f"got limit={limit}, random_variation_steps={random_variation_steps}"
            )
        super().__init__(env)
        self.limit, self.random_variation_steps = limit, random_variation_steps
        self._rng = np.random.default_rng()
        self._episode_limit, self._steps = limit, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        variation = self.random_variation_steps
        self._episode_limit = self.limit + (int(self._rng.integers(-variation, variation + 1)) if variation else 0)
        self._steps = 0
        return reset_inner(self.env, seed, options)

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        if self._steps >= self._episode_limit and not terminated:
            truncated = True
        return obs, reward, terminated, truncated, info


def _to_numpy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _to_torch(value: Any, device: torch.device | str) -> Any:
    if isinstance(value, dict):
        return {k: _to_torch(v, device) for k, v in value.items()}
    return torch.as_tensor(np.asarray(value), device=device)


class NumpyObsWrapper(ResetsThrough, gym.ObservationWrapper):
    """Convert observations (lists, lazy frames, torch tensors, dicts of them) to numpy arrays the sampler can copy."""

    def observation(self, observation: Obs) -> Obs:
        return _to_numpy(observation)


class NumpyToTorchWrapper(gym.Wrapper):
    """Expose a numpy (often vectorised) env as torch tensors, the format batched sampling works in.

    Observations, rewards, ``terminated`` and ``truncated`` become tensors on ``device``; actions given as tensors
    are converted back to numpy before they reach the env.
    """

    def __init__(self, env: gym.Env, device: torch.device | str = "cpu") -> None:
        super().__init__(env)
        self.device = device

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict]:
        obs, info = reset_inner(self.env, seed, options)
        return _to_torch(obs, self.device), info

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(_to_numpy(action))
        reward = torch.as_tensor(np.asarray(reward, dtype=np.float32), device=self.device)
        terminated = torch.as_tensor(np.asarray(terminated, dtype=bool), device=self.device)
        truncated = torch.as_tensor(np.asarray(truncated, dtype=bool), device=self.device)
        return _to_torch(obs, self.device), reward, terminated, truncated, info


class RecordEpisodeStatistics(gym.Wrapper):
    """Put ``{"r": return, "l": length}`` in ``info["episode"]`` when an episode ends.

    With ``--use_record_episode_statistics`` Sample Factory reports these numbers instead of its own sums, which
    matters when inner wrappers (e.g. ``EpisodicLifeEnv``, reward clipping) change what one "episode" means.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.episode_return, self.episode_length = 0.0, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict]:
        self.episode_return, self.episode_length = 0.0, 0
        return reset_inner(self.env, seed, options)

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_return += float(reward)
        self.episode_length += 1
        if terminated or truncated:
            info = dict(info)
            info["episode"] = {"r": self.episode_return, "l": self.episode_length}
            self.episode_return, self.episode_length = 0.0, 0
        return obs, reward, terminated, truncated, info


EpisodeStatisticsWrapper = RecordEpisodeStatistics


class EpisodeCounterWrapper(ResetsThrough, gym.Wrapper):
    """Number the episodes a single-agent env finishes, reported as ``info["episode_extra_stats"]["episode_number"]``.

    ``episode_count`` is how many episodes ended so far (the one ending now included, so the first is 1). The number
    rides on the episode's extra stats, so evaluation summaries and TensorBoard can tell episodes of one env apart.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.episode_count = 0

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self.episode_count += 1
            info = dict(info)
            info["episode_extra_stats"] = {**info.get("episode_extra_stats", {}), "episode_number": self.episode_count}
        return obs, reward, terminated, truncated, info


def _action_meanings(env: gym.Env) -> list[str] | None:
    get_meanings = getattr(env.unwrapped, "get_action_meanings", None)
    return list(get_meanings()) if callable(get_meanings) else None


class NoopResetEnv(gym.Wrapper):
    """After reset take a random number (1..``noop_max``) of no-op actions so deterministic games start differently."""

    def __init__(self, env: gym.Env, noop_max: int = 30, noop_action: int = 0) -> None:
        super().__init__(env)
        meanings = _action_meanings(env)
        if meanings is not None and meanings[noop_action] != "NOOP":
            raise ValueError(f"NoopResetEnv: action {noop_action} is {meanings[noop_action]!r}, not 'NOOP'")
        self.noop_max, self.noop_action = noop_max, noop_action

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict]:
        obs, info = reset_inner(self.env, seed, options)
        for _ in range(int(self.np_random.integers(1, self.noop_max + 1))):
            obs, _, terminated, truncated, info = self.env.step(self.noop_action)
            if terminated or truncated:
                obs, info = reset_inner(self.env, None, options)
        return obs, info


class ActionRepeatWrapper(ResetsThrough, gym.Wrapper):
    """Apply each action ``repeat`` times and sum the rewards: one agent decision stands for several env frames.

    Stops early when the episode ends, so a step never runs into the next episode. ``info["num_frames"]`` is the
    number of frames actually stepped, so frame counts stay exact at episode ends. Unlike :class:`MaxAndSkipEnv`
    the observation is the last one as is (no max-pooling), which suits state vectors.
    """

    def __init__(self, env: gym.Env, repeat: int) -> None:
        if repeat < 1:
            raise ValueError(f"ActionRepeatWrapper needs repeat >= 1, got {repeat}")
        super().__init__(env)
        self.repeat = repeat

    def step(self, action: Any) -> StepResult:
        total_reward = 0.0
        frames = 0
        terminated = truncated = False
        while frames < self.repeat and not (terminated or truncated):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total_reward += float(reward)
            frames += 1
        info = dict(info)
        info["num_frames"] = frames
        return obs, total_reward, terminated, truncated, info


class MaxAndSkipEnv(ResetsThrough, gym.Wrapper):
    """Repeat each action ``skip`` times, sum rewards and max-pool the last two frames (removes Atari flicker).

    ``info["num_frames"]`` is the number of env frames actually stepped, so FPS counts real frames.
    """

    def __init__(self, env: gym.Env, skip: int = 4) -> None:
        if skip < 1:
            raise ValueError(f"MaxAndSkipEnv needs skip >= 1, got {skip}")
        super().__init__(env)
        self.skip = skip

    def step(self, action: Any) -> StepResult:
        total_reward, last_frames = 0.0, deque(maxlen=2)
        terminated = truncated = False
        info: dict[str, Any] = {}
        frames = 0
        while frames < self.skip and not (terminated or truncated):
            obs, reward, terminated, truncated, info = self.env.step(action)
            last_frames.append(obs)
            total_reward += float(reward)
            frames += 1
        pooled = np.maximum(last_frames[0], last_frames[-1])
        info = dict(info)
        info["num_frames"] = frames
        return pooled, total_reward, terminated, truncated, info


class EpisodicLifeEnv(gym.Wrapper):
    """Report the loss of a life as ``terminated`` (helps value learning) but only truly reset on game over.

    Lives are read from ``info["lives"]``, which ale-py provides.
    """

    def __init__(self, env: gym.Env, noop_action: int = 0) -> None:
        super().__init__(env)
        self.noop_action = noop_action
        self.lives = 0
        self.game_over = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict]:
        if self.game_over or seed is not None:
            obs, info = reset_inner(self.env, seed, options)
        else:
            obs, _, terminated, truncated, info = self.env.step(self.noop_action)
            if terminated or truncated:
                obs, info = reset_inner(self.env, None, options)
        self.game_over = False
        self.lives = info.get("lives", 0)
        return obs, info

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = info.get("lives", self.lives)
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info


class FireResetEnv(gym.Wrapper):
    """Press FIRE (action 1, then 2) after reset, for games that wait for it and would otherwise stall the agent."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        meanings = _action_meanings(env)
        if meanings is not None and (len(meanings) < 3 or meanings[1] != "FIRE"):
            raise ValueError(f"FireResetEnv needs action 1 to be 'FIRE' and >= 3 actions, got {meanings}")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict]:
        obs, info = reset_inner(self.env, seed, options)
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = reset_inner(self.env, None, options)
        return obs, info
