"""Envs that break the Gymnasium contract in one seeded way each, for the env-interface fuzz.

:class:`BadEnv` is a well-behaved 10-step episodic env (Box(4,) float32 observations, or a Dict of two entries,
Discrete(2) actions) until its ``fault`` fires: at the first reset (``at=0``) or at step ``at``. Each fault family
lists how it is broken and the words the library's error must contain (``None``: it is handled, training goes on).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

EPISODE_LEN = 10


@dataclass(frozen=True)
class Fault:
    family: str
    at: int  # 0: the first reset; k >= 1: the k-th step
    value: Any = None
    dict_obs: bool = False


def _box() -> spaces.Box:
    return spaces.Box(-10.0, 10.0, shape=(4,), dtype=np.float32)


class BadEnv(gym.Env):
    """Behaves until ``fault.at``, then returns what ``fault.family`` says."""

    def __init__(self, fault: Fault, action_space: gym.Space | None = None) -> None:
        self.fault = fault
        if fault.family == "obs_dtype":
            self.observation_space = spaces.Box(0, 255, shape=(4,), dtype=np.uint8)
        elif fault.dict_obs:
            self.observation_space = spaces.Dict({"pos": _box(), "goal": spaces.Box(-1, 1, (2,), np.float32)})
        else:
            self.observation_space = _box()
        self.action_space = action_space or spaces.Discrete(2)
        self.steps = 0
        self.t = 0

    def _obs(self) -> Any:
        space = self.observation_space
        if isinstance(space, spaces.Dict):
            return {key: np.full(sub.shape, 0.1 * self.t, dtype=sub.dtype) for key, sub in space.spaces.items()}
        return np.full(space.shape, min(self.t, 9), dtype=space.dtype)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        self.t = 0
        obs, info = self._obs(), {}
        if self.fault.at == 0 or self.fault.family.startswith("reset_"):
            return self._break(obs, 0.0, False, False, info, reset=True)
        return obs, info

    def step(self, action: Any) -> Any:
        self.steps += 1
        self.t += 1
        obs, reward, terminated, truncated, info = self._obs(), 1.0, self.t >= EPISODE_LEN, False, {}
        if self.steps >= self.fault.at > 0 and not self.fault.family.startswith("reset_"):
            return self._break(obs, reward, terminated, truncated, info, reset=False)
        return obs, reward, terminated, truncated, info

    def _break(self, obs, reward, terminated, truncated, info, reset: bool) -> Any:  # noqa: C901 (one case each)
        family, value = self.fault.family, self.fault.value
        if family in ("obs_shape", "obs_dtype", "obs_value"):
            obs = value
        elif family == "obs_missing_key":
            obs = {k: v for k, v in obs.items() if k != value}
        elif family in ("obs_nan", "obs_inf"):
            obs = obs.copy() if not isinstance(obs, dict) else {k: v.copy() for k, v in obs.items()}
            target = obs["pos"] if isinstance(obs, dict) else obs
            target[value] = np.nan if family == "obs_nan" else np.inf
        elif family in ("reward_nan", "reward_inf", "reward_type", "reward_ok"):
            reward = value
        elif family in ("terminated_type", "terminated_ok"):
            terminated = value
        elif family == "info_type":
            info = value
        elif family == "reset_bare_obs":
            return obs
        elif family == "reset_extra":
            return obs, info, value
        elif family == "step_arity":
            return (obs, reward, terminated, truncated, info, value)[:value]
        if reset:
            return obs, info
        return obs, reward, terminated, truncated, info


# family -> (draw the fault from a seeded rng, substring the error must contain or None when handled)
def _at(rng: random.Random) -> int:
    return rng.choice([0, 1, 2]) if rng.random() < 0.5 else rng.choice([1, 2])


def _step_at(rng: random.Random) -> int:
    return rng.choice([1, 2])


def _wrong_shape(rng: random.Random) -> np.ndarray:
    shape = rng.choice([(3,), (5,), (4, 1), (1, 4), (), (2, 2), (0,)])
    return np.zeros(shape, dtype=np.float32)


FAMILIES: dict[str, tuple] = {
    "obs_shape": (lambda r: Fault("obs_shape", _at(r), _wrong_shape(r)), "needs shape (4,)"),
    "obs_ragged": (lambda r: Fault("obs_value", _at(r), [1.0, [2.0, 3.0]]), "needs shape (4,)"),
    "obs_none": (lambda r: Fault("obs_value", _at(r), None), "needs shape (4,)"),
    # another numeric dtype is cast into the space's, as Sample Factory 2 does (with one warning per key)
    "obs_dtype": (
        lambda r: Fault("obs_dtype", _at(r), np.full(4, r.random() * 200, dtype=r.choice([np.float32, np.float64]))),
        None,
    ),
    "obs_string": (lambda r: Fault("obs_value", _at(r), np.array(["a"] * 4)), "cannot hold those values"),
    "obs_missing_key": (
        lambda r: Fault("obs_missing_key", _at(r), r.choice(["pos", "goal"]), dict_obs=True),
        "without key",
    ),
    "obs_not_dict": (lambda r: Fault("obs_value", _at(r), np.zeros(4, np.float32), dict_obs=True), "is a Dict"),
    "obs_nan": (lambda r: Fault("obs_nan", _at(r), r.randrange(4), dict_obs=r.random() < 0.3), "non-finite"),
    "obs_inf": (lambda r: Fault("obs_inf", _at(r), r.randrange(4)), "non-finite"),
    "reward_nan": (
        lambda r: Fault("reward_nan", _step_at(r), r.choice([float("nan"), np.float32("nan")])),
        "not finite",
    ),  # fmt: skip
    "reward_inf": (lambda r: Fault("reward_inf", _step_at(r), r.choice([float("inf"), -np.inf])), "not finite"),
    "reward_type": (
        lambda r: Fault(
            "reward_type", _step_at(r), r.choice([None, "1.0", np.array([1.0, 2.0]), np.array([0.5]), [1.0], 1j, True])
        ),
        "a reward is one finite real number",
    ),
    "terminated_type": (
        lambda r: Fault("terminated_type", _step_at(r), r.choice([None, "False", np.array([True, False]), 2, 0.5])),
        "it must be a bool",
    ),
    "info_type": (lambda r: Fault("info_type", _at(r), r.choice([None, [], "info", 3])), "info must be a dict"),
    "reset_bare_obs": (lambda r: Fault("reset_bare_obs", 0), "returns a pair (obs, info)"),
    "reset_extra": (lambda r: Fault("reset_extra", 0, r.choice([None, {}, 0])), "returns a pair (obs, info)"),
    "step_arity": (lambda r: Fault("step_arity", _step_at(r), r.choice([4, 6])), "step() returns 5"),
    # NaN/inf after the first checked steps: found by the once-per-rollout check
    "late_reward_nan": (lambda r: Fault("reward_nan", r.randint(3, 20), float("nan")), "non-finite reward"),
    "late_obs_inf": (lambda r: Fault("obs_inf", r.randint(3, 20), r.randrange(4)), "non-finite observation"),
    # handled: values Gymnasium allows, converted where they are stored
    "reward_ok": (
        lambda r: Fault("reward_ok", _step_at(r), r.choice([1, np.float32(0.5), np.int64(2), np.array(0.5), -3.0])),
        None,
    ),  # fmt: skip
    "terminated_ok": (lambda r: Fault("terminated_ok", _step_at(r), r.choice([np.bool_(False), 0, 1, True])), None),
    "obs_castable": (
        lambda r: Fault(
            "obs_value", _at(r), r.choice([np.zeros(4, np.float64), [0.0, 1.0, 2.0, 3.0], np.arange(4, dtype=np.int32)])
        ),
        None,
    ),  # fmt: skip
}


def draw_fault(family: str, seed: int) -> Fault:
    return FAMILIES[family][0](random.Random(zlib.crc32(f"{family}:{seed}".encode())))
