"""``make_nethack_env``: the factory registered for every ``nethack_*`` name.

The stack, innermost first:

- NLE's task env (``NetHackChallenge-v0``, ``NetHackScore-v0``, ...) with the character (``--character``), the
  episode limit (``--max_episode_steps``), the idle-step penalty (``--penalty_step``, ``--penalty_time``,
  ``--fn_penalty_step``) and optional ttyrec recordings (``--savedir``, ``--save_ttyrec_every``); observation keys
  ``tty_chars``, ``tty_colors``, ``tty_cursor`` (the 24x80 terminal), ``blstats``, ``message`` and ``glyphs``;
- observations copied out of NLE's buffers (NLE rewrites the same arrays every step);
- ``NoProgressTimeout`` (``--no_progress_timeout``): an episode whose game clock stops for that many steps ends;
- ``BlstatsInfoWrapper`` and ``TaskRewardsInfoWrapper``: the final score, depth, experience, ... and the task
  scores (gold, scouting, stairs, Sokoban, ...) as ``episode_extra_stats`` (``policy_stats/avg_*`` in TensorBoard);
- ``TileTTY`` with ``--add_image_observation``: ``screen_image``, a ``--crop_dim`` cells square around the agent at
  ``--pixel_size`` pixels per cell (and ``render()`` frames for videos);
- ``PrevActionsWrapper`` with ``--use_prev_action``: ``prev_actions``, the last action taken.

``nle`` is an optional dependency: this module imports without it, and creating an env without it raises
``MissingDependencyError`` with the install command.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import UnknownEnvError, require_optional_module, unknown_env_message
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sf_examples.nethack.utils.wrappers.blstats_info import BlstatsInfoWrapper
from sf_examples.nethack.utils.wrappers.no_progress_timeout import NoProgressTimeout
from sf_examples.nethack.utils.wrappers.prev_actions import PrevActionsWrapper
from sf_examples.nethack.utils.wrappers.task_rewards import TaskRewardsInfoWrapper
from sf_examples.nethack.utils.wrappers.tile_tty import TileTTY

NLE_OBSERVATION_KEYS = ("tty_chars", "tty_colors", "tty_cursor", "blstats", "message", "glyphs")
INSTALL_HINT = 'pip install "sample-factory[nethack]"'


@dataclass(frozen=True)
class NetHackSpec:
    """One ``nethack_*`` env: its name and the Gymnasium id NLE registers for the task."""

    name: str
    env_id: str


NETHACK_ENVS_SPECS: tuple[NetHackSpec, ...] = (
    NetHackSpec("nethack_staircase", "NetHackStaircase-v0"),
    NetHackSpec("nethack_score", "NetHackScore-v0"),
    NetHackSpec("nethack_pet", "NetHackStaircasePet-v0"),
    NetHackSpec("nethack_oracle", "NetHackOracle-v0"),
    NetHackSpec("nethack_gold", "NetHackGold-v0"),
    NetHackSpec("nethack_eat", "NetHackEat-v0"),
    NetHackSpec("nethack_scout", "NetHackScout-v0"),
    NetHackSpec("nethack_challenge", "NetHackChallenge-v0"),
)
NETHACK_ENVS: tuple[str, ...] = tuple(spec.name for spec in NETHACK_ENVS_SPECS)

# what an env created without a cfg (a notebook, a test) uses: the family's defaults (nethack_params.py)
FALLBACK_CFG: dict[str, Any] = {
    "character": "mon-hum-neu-mal",
    "max_episode_steps": 100000,
    "penalty_step": 0.0,
    "penalty_time": 0.0,
    "fn_penalty_step": "constant",
    "savedir": None,
    "save_ttyrec_every": 0,
    "add_image_observation": True,
    "crop_dim": 18,
    "pixel_size": 6,
    "use_prev_action": True,
    "no_progress_timeout": 150,
}


def nethack_available() -> bool:
    """Whether the ``nle`` package is installed (without importing it)."""
    return importlib.util.find_spec("nle") is not None


def import_nle() -> Any:
    """The ``nle`` module (which registers NLE's Gymnasium ids), or ``MissingDependencyError`` naming the extra."""
    return require_optional_module("nle", "nethack", "The NetHack envs (nethack_*)")


def nethack_env_by_name(name: str) -> NetHackSpec:
    """The spec of a ``nethack_*`` name; ``UnknownEnvError`` listing the valid names otherwise."""
    for spec in NETHACK_ENVS_SPECS:
        if spec.name == name:
            return spec
    raise UnknownEnvError(unknown_env_message(name, list(NETHACK_ENVS)))


class _OwnedObservations(gym.Wrapper):
    """Copy every observation array out of NLE's buffers, which the next step overwrites in place."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        return {key: np.array(value) for key, value in obs.items()}, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return {key: np.array(value) for key, value in obs.items()}, reward, terminated, truncated, info


class _SeededReset(gym.Wrapper):
    """``reset(seed=s)`` seeds NetHack's own generators (core and display) where the task allows it.

    ``NetHackChallenge`` forbids choosing seeds (its games are meant to be unpredictable): there the seed only
    seeds Gymnasium's generator and NetHack picks its own.
    """

    def __init__(self, env: gym.Env, allow_seeding: bool) -> None:
        super().__init__(env)
        self.allow_seeding = allow_seeding

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        if seed is not None and self.allow_seeding:
            core, disp = np.random.SeedSequence(seed).generate_state(2, dtype=np.uint32)
            self.env.unwrapped.seed(int(core), int(disp), False)
        return self.env.reset(seed=seed, options=options)


class _PrintEachStep(gym.Wrapper):
    """``render_mode="human"``: print the terminal after every reset and step, as Gymnasium's contract asks."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        result = self.env.reset(**kwargs)
        self.env.unwrapped.render()
        return result

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        result = self.env.step(action)
        self.env.unwrapped.render()
        return result


def _cfg_values(cfg: Config | None) -> AttrDict:
    values = dict(FALLBACK_CFG)
    if cfg is not None:
        values.update({key: getattr(cfg, key) for key in FALLBACK_CFG if hasattr(cfg, key)})
    return AttrDict(values)


def make_nethack_env(env_name: str, cfg: Config | None = None, _env_config: Any = None, render_mode: Any = None):
    """Create the env of a ``nethack_*`` name with the flags of ``cfg`` (the family defaults without one)."""
    spec = nethack_env_by_name(env_name)
    import_nle()
    values = _cfg_values(cfg)
    kwargs: dict[str, Any] = dict(
        character=values.character,
        max_episode_steps=int(values.max_episode_steps),
        penalty_step=float(values.penalty_step),
        penalty_time=float(values.penalty_time),
        penalty_mode=values.fn_penalty_step,
        observation_keys=NLE_OBSERVATION_KEYS,
        render_mode="human",  # NLE's print-to-terminal; frames for videos come from TileTTY
    )
    if values.savedir and int(values.save_ttyrec_every) > 0:
        kwargs.update(savedir=values.savedir, save_ttyrec_every=int(values.save_ttyrec_every))
    if spec.name == "nethack_challenge":
        kwargs["no_progress_timeout"] = 10**9  # NoProgressTimeout below decides
    env: gym.Env = gym.make(spec.env_id, disable_env_checker=True, **kwargs)
    env = _SeededReset(env, allow_seeding=spec.name != "nethack_challenge")
    env = _OwnedObservations(env)
    if int(values.no_progress_timeout) > 0:
        env = NoProgressTimeout(env, int(values.no_progress_timeout))
    env = BlstatsInfoWrapper(env)  # outside the timeout, so episodes it cuts are reported too
    env = TaskRewardsInfoWrapper(env)
    crop = int(values.crop_dim) if values.add_image_observation else 0
    if crop or render_mode == "rgb_array":
        env = TileTTY(env, crop_size=crop, rescale_font_size=(int(values.pixel_size), int(values.pixel_size)))
    if values.use_prev_action:
        env = PrevActionsWrapper(env)
    if render_mode == "human":
        env = _PrintEachStep(env)
    return env
