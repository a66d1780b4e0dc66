"""``make_mujoco_env``: the factory registered for every ``mujoco_*`` name, and the headless-rendering setup.

The names are Sample Factory 2's, and so are the tasks by default (``--mujoco_version=v4``): Gymnasium's v4 MuJoCo
envs, given the policy's actions as sampled. The task clamps an out-of-range action to its control range but
charges its control cost on the action as given, so exploration noise beyond the range is penalised; Sample
Factory 2's published MuJoCo scores were trained on these. ``--mujoco_version=v5`` makes Gymnasium's current
tasks instead, with the policy acting in ``[-1, 1]``: actions clipped to that box and rescaled to the task's range
(``[-3, 3]`` for the pendulum, ``[-0.4, 0.4]`` for the humanoids), so an out-of-range sample costs nothing extra.
"""

from __future__ import annotations

import ctypes.util
import os
import warnings
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import ClipAction, RescaleAction

from sample_factory.envs.env_utils import UnknownEnvError, require_optional_module, unknown_env_message
from sample_factory.envs.env_wrappers import ActionRepeatWrapper
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import is_module_available
from sf_examples.mujoco.mujoco_params import DEFAULT_MUJOCO_VERSION, MUJOCO_VERSIONS

# Sample Factory 2's env names -> the Gymnasium ids of its tasks (--mujoco_version=v4)
MUJOCO_ENVS: dict[str, str] = {
    "mujoco_ant": "Ant-v4",
    "mujoco_halfcheetah": "HalfCheetah-v4",
    "mujoco_hopper": "Hopper-v4",
    "mujoco_humanoid": "Humanoid-v4",
    "mujoco_standup": "HumanoidStandup-v4",
    "mujoco_doublependulum": "InvertedDoublePendulum-v4",
    "mujoco_pendulum": "InvertedPendulum-v4",
    "mujoco_reacher": "Reacher-v4",
    "mujoco_walker": "Walker2d-v4",
    "mujoco_pusher": "Pusher-v4",  # Gymnasium makes Pusher-v4 on mujoco < 3 only: use --mujoco_version=v5 there
    "mujoco_swimmer": "Swimmer-v4",
}

# the GL backends that render without a display, in order of preference, with the library each one loads
HEADLESS_GL_BACKENDS: tuple[tuple[str, str], ...] = (("egl", "EGL"), ("osmesa", "OSMesa"))
# video frames when the cfg does not say (a notebook, a test): software rendering of 480x480 frames is slow
DEFAULT_RENDER_SIZE = (480, 480)


def mujoco_available() -> bool:
    """True if the ``mujoco`` package is installed (tests skip the MuJoCo family without it); it is not imported."""
    return is_module_available("mujoco")


@dataclass(frozen=True)
class MujocoSpec:
    """One ``mujoco_*`` env: its name and the Gymnasium id it makes."""

    name: str
    env_id: str


def mujoco_env_by_name(name: str, version: str = DEFAULT_MUJOCO_VERSION) -> MujocoSpec:
    """The spec of a ``mujoco_*`` name; UnknownEnvError naming the valid names otherwise."""
    return MujocoSpec(name, mujoco_gym_id(name, version))


def mujoco_gym_id(env_name: str, version: str = DEFAULT_MUJOCO_VERSION) -> str:
    """The Gymnasium id of a ``mujoco_*`` name in ``version`` (``v4``: Sample Factory 2's task, ``v5``: Gymnasium's
    current one); UnknownEnvError naming the valid names otherwise."""
    if env_name not in MUJOCO_ENVS:
        raise UnknownEnvError(unknown_env_message(env_name, sorted(MUJOCO_ENVS)))
    if version not in MUJOCO_VERSIONS:
        raise ValueError(f"--mujoco_version={version!r} is not one of {', '.join(MUJOCO_VERSIONS)}")
    return MUJOCO_ENVS[env_name].rsplit("-", 1)[0] + f"-{version}"


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def choose_headless_gl() -> str | None:
    """Set ``MUJOCO_GL`` to a backend that renders without a display, when none is set and there is no display.

    MuJoCo reads ``MUJOCO_GL`` when it first creates a GL context, so this must run before rendering; the
    family calls it when its module is imported (worker processes import it too). EGL (``libegl1``) is
    preferred, OSMesa (``libosmesa6``) is the fallback. Returns the backend in use, None when none was found.
    """
    if os.environ.get("MUJOCO_GL") or has_display():
        return os.environ.get("MUJOCO_GL")
    for backend, library in HEADLESS_GL_BACKENDS:
        if ctypes.util.find_library(library):
            os.environ["MUJOCO_GL"] = backend
            if backend == "osmesa":
                os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")
            return backend
    return None


def _check_can_render(render_mode: str | None) -> None:
    if render_mode == "rgb_array" and choose_headless_gl() is None and not has_display():
        raise RuntimeError(
            "recording MuJoCo video without a display needs EGL or OSMesa: install one of them "
            "(Debian/Ubuntu: apt-get install libegl1 libegl-mesa0, or apt-get install libosmesa6) "
            "and/or set MUJOCO_GL=egl or MUJOCO_GL=osmesa"
        )


def _render_kwargs(cfg: Config | None, render_mode: str | None) -> dict[str, Any]:
    if render_mode != "rgb_array":
        return {}
    width = getattr(cfg, "mujoco_render_width", None) or DEFAULT_RENDER_SIZE[0]
    height = getattr(cfg, "mujoco_render_height", None) or DEFAULT_RENDER_SIZE[1]
    return {"width": int(width), "height": int(height)}


def make_mujoco_env(
    env_name: str,
    _cfg: Config | None = None,
    _env_config: AttrDict | None = None,
    render_mode: str | None = None,
    *,
    cfg: Config | None = None,
    env_config: AttrDict | None = None,
) -> gym.Env:
    """The ``make_env_func`` of every ``mujoco_*`` env (module level: worker processes unpickle it by reference).

    The cfg arrives positionally from the library (``_cfg``) or as ``cfg=``; either way it sets the frameskip and
    the video size. ``env_config`` is unused: seeding comes from ``reset(seed=...)``, which each rollout worker calls.
    """
    del _env_config, env_config
    cfg = cfg if cfg is not None else _cfg
    version = mujoco_version(cfg)
    gym_id = mujoco_env_by_name(env_name, version).env_id
    require_optional_module("mujoco", extra="mujoco", what="MuJoCo envs")
    _check_can_render(render_mode)
    with warnings.catch_warnings():
        # Gymnasium 1.x calls v4 "out of date" in every process that makes one; the choice is --mujoco_version's
        warnings.filterwarnings("ignore", message=".*is out of date", category=DeprecationWarning)
        env = gym.make(gym_id, render_mode=render_mode, **_render_kwargs(cfg, render_mode))
    return wrap_mujoco_env(env, cfg)


def mujoco_version(cfg: Config | None) -> str:
    """``--mujoco_version`` (``v4`` where the cfg has none: a notebook, a test)."""
    return str(getattr(cfg, "mujoco_version", None) or DEFAULT_MUJOCO_VERSION)


def wrap_mujoco_env(env: gym.Env, cfg: Config | None) -> gym.Env:
    """``--env_frameskip`` repeats; with ``--mujoco_version=v5``, policy actions in ``[-1, 1]`` (clipped, then
    rescaled to the task's range). Sample Factory 2's v4 tasks get the actions as sampled."""
    if mujoco_version(cfg) == "v5":
        ones = np.ones(env.action_space.shape, dtype=np.float32)  # float32 bounds: float64 ones make Gymnasium warn
        env = ClipAction(RescaleAction(env, -ones, ones))
    frameskip = int(getattr(cfg, "env_frameskip", 1) or 1)
    return ActionRepeatWrapper(env, frameskip) if frameskip > 1 else env


# decided once per process, before any MuJoCo env can render
choose_headless_gl()
