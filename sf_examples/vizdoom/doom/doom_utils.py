"""``make_doom_env``: the factory registered for every ``doom_*`` name, and the per-player wrapper stack."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import gymnasium as gym

from sample_factory.cfg.validation import ConfigError
from sample_factory.envs.env_wrappers import (
    PixelFormatChwWrapper,
    ResizeWrapper,
    RewardScalingWrapper,
    StackFramesWrapper,
)
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import log
from sf_examples.vizdoom.doom.doom_gym import VizdoomEnv
from sf_examples.vizdoom.doom.game_setup import GameOptions, NetworkRole
from sf_examples.vizdoom.doom.lifecycle import pick_port, run_base_port
from sf_examples.vizdoom.doom.multiplayer import VizdoomMultiAgentEnv
from sf_examples.vizdoom.doom.scenarios import TICS_PER_SECOND, DoomSpec, doom_spec
from sf_examples.vizdoom.doom.wrappers import DoomMeasurementsWrapper, DoomRewardShapingWrapper

# what an env created without a cfg (e.g. in a notebook or a test) uses; the same values as the family's flags
FALLBACK_CFG: dict[str, Any] = {
    "env_frameskip": 4,
    "res_w": 128,
    "res_h": 72,
    "wide_aspect_ratio": False,
    "num_agents": -1,
    "num_bots": -1,
    "num_humans": 0,
    "start_bot_difficulty": None,
    "timelimit": None,
    "doom_base_port": 0,
    "env_framestack": 1,
    "pixel_format": "CHW",
}


def _option(cfg: Config | None, name: str) -> Any:
    """A family flag from ``cfg``; tools that do not add the family's flags (the random sampler) get the fallback."""
    value = getattr(cfg, name, None) if cfg is not None else None
    return FALLBACK_CFG[name] if value is None else value


def _window_visible(render_mode: str | None) -> bool:
    """Only human rendering opens ViZDoom's window, and only where there is a display to open it on."""
    if render_mode != "human":
        return False
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        log.warning("render_mode='human' but no display is available: running ViZDoom headless")
        return False
    return True


def game_options(cfg: Config | None, render_mode: str | None, env_config: AttrDict | None) -> GameOptions:
    """Per-instance options from the family flags; ``--timelimit`` (minutes) overrides the scenario's length."""
    timelimit = _option(cfg, "timelimit")
    seed = getattr(cfg, "seed", None) if cfg is not None else None
    env_id = env_config.env_id if env_config is not None else 0
    return GameOptions(
        wide_aspect_ratio=bool(_option(cfg, "wide_aspect_ratio")),
        window_visible=_window_visible(render_mode),
        timeout_tics=None if timelimit is None else int(float(timelimit) * 60 * TICS_PER_SECOND),
        bot_difficulty=_option(cfg, "start_bot_difficulty"),
        seed=None if seed is None else int(seed) * 1000 + max(env_id, 0),
    )


def wrap_player(core: VizdoomEnv, cfg: Config | None) -> gym.Env:
    """Shaping and measurements on the raw game, then resize to ``--res_w x --res_h``, CHW (unless
    ``--pixel_format=HWC``), ``--env_framestack`` frames stacked along the channels, reward scale."""
    spec = core.spec_
    env: gym.Env = core
    if spec.deathmatch:
        env = DoomRewardShapingWrapper(env)
    if spec.measurements:
        env = DoomMeasurementsWrapper(env)
    # area interpolation: nearest-neighbour drops thin sprites (distant enemies) when shrinking 160 -> 128
    env = ResizeWrapper(env, int(_option(cfg, "res_w")), int(_option(cfg, "res_h")), area_interpolation=True)
    chw = _option(cfg, "pixel_format") != "HWC"
    if chw:
        env = PixelFormatChwWrapper(env)
    framestack = int(_option(cfg, "env_framestack"))
    if framestack > 1:
        if not chw:
            raise ConfigError(
                f"--env_framestack={framestack} stacks frames along the channel axis of CHW images: with "
                f"--pixel_format=HWC pass --env_framestack=1, or use --pixel_format=CHW"
            )
        env = StackFramesWrapper(env, framestack)
    if spec.reward_scaling != 1.0:
        env = RewardScalingWrapper(env, spec.reward_scaling)
    for wrapper_class, kwargs in spec.extra_wrappers:
        env = wrapper_class(env, **(kwargs or {}))
    return env


def _counts(spec: DoomSpec, cfg: Config | None) -> tuple[int, int]:
    """(agents, bots): ``--num_agents``/``--num_bots`` override the env's defaults when >= 0."""
    if int(_option(cfg, "num_humans")) != 0:
        raise ValueError(
            f"--num_humans={_option(cfg, 'num_humans')}: human players cannot join these envs' matches; use "
            "--num_humans=0 (the default) and watch or play against a trained agent with the enjoy script instead"
        )
    num_agents = int(_option(cfg, "num_agents"))
    num_bots = int(_option(cfg, "num_bots"))
    num_agents = spec.num_agents if num_agents <= 0 else num_agents
    num_bots = spec.num_bots if num_bots < 0 else num_bots
    if (num_agents > 1 or num_bots > 0) and not spec.deathmatch:
        raise ValueError(f"{spec.name} is a single-player scenario: --num_agents/--num_bots need a doom_duel* or "
                         f"doom_deathmatch* env")  # fmt: skip
    return num_agents, num_bots


def doom_env_by_name(name: str) -> DoomSpec:
    """The spec of a ``doom_*`` name; the error lists every VizDoom env."""
    return doom_spec(name)


def make_doom_env(
    env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> gym.Env:
    """The ``make_env_func`` of every ``doom_*`` env (module level: worker processes unpickle it by reference)."""
    return make_doom_env_from_spec(doom_env_by_name(env_name), env_name, cfg, env_config, render_mode)


def make_doom_env_from_spec(
    spec: DoomSpec,
    _env_name: str | None = None,
    cfg: Config | None = None,
    env_config: AttrDict | None = None,
    render_mode: str | None = None,
) -> gym.Env:
    """An env of ``spec`` (one player, or a whole self-play match): register ``functools.partial(
    make_doom_env_from_spec, spec)`` to make your own scenario a ``make_env_func``."""
    num_agents, num_bots = _counts(spec, cfg)
    if num_agents > 1:
        return make_doom_multiplayer_env(replace(spec, num_agents=num_agents, num_bots=num_bots), cfg, env_config,
                                         render_mode)  # fmt: skip
    return make_doom_env_impl(spec, cfg, env_config, num_bots=num_bots, render_mode=render_mode)


def _port_picker(cfg: Config | None, env_config: AttrDict | None) -> Callable[[int], int]:
    env_id = env_config.env_id if env_config is not None else 0
    base_port = int(_option(cfg, "doom_base_port")) or run_base_port()
    return functools.partial(pick_port, base_port, max(env_id, 0))


def make_doom_env_impl(
    doom_spec: DoomSpec,
    cfg: Config | None = None,
    env_config: AttrDict | None = None,
    skip_frames: int | None = None,
    episode_horizon: int | None = None,
    player_id: int | None = None,
    num_agents: int | None = None,
    max_num_players: int | None = None,
    num_bots: int = 0,
    custom_resolution: str | None = None,
    render_mode: str | None = None,
    *,
    tic_barrier: threading.Barrier | None = None,
) -> gym.Env:
    """One player's wrapped env. ``skip_frames`` (default ``--env_frameskip``), ``episode_horizon`` (tics, default
    the spec's), ``custom_resolution`` ("WxH", a ViZDoom resolution). ``player_id`` of ``max_num_players`` makes it
    a networked player (0 hosts); a deathmatch without them hosts a game of ``num_agents`` (default 1) players."""
    frameskip = int(skip_frames if skip_frames is not None else _option(cfg, "env_frameskip"))
    options = game_options(cfg, render_mode, env_config)
    if episode_horizon is not None:
        options.timeout_tics = int(episode_horizon)
    options.resolution = custom_resolution
    network = None
    if player_id is not None or doom_spec.deathmatch:
        index = player_id or 0
        players = max_num_players or num_agents or 1
        network = NetworkRole(host=index == 0, num_players=players, player_index=index)
        if index != 0:
            options.window_visible, render_mode = False, None
    core = VizdoomEnv(
        skip_frames=frameskip, render_mode=render_mode, record_to=getattr(cfg, "record_to", None), spec=doom_spec,
        options=options, network=network,
        num_bots=num_bots if network is None or network.host else 0, tic_barrier=tic_barrier,
        port_picker=None if tic_barrier is not None else _port_picker(cfg, env_config),
    )  # fmt: skip
    return wrap_player(core, cfg)


def make_doom_multiplayer_env(
    doom_spec: DoomSpec, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> VizdoomMultiAgentEnv:
    """A self-play match of ``doom_spec.num_agents`` players (plus its bots) as one multi-agent env."""
    num_agents = doom_spec.num_agents
    barrier = threading.Barrier(num_agents)
    players = [
        make_doom_env_impl(
            doom_spec, cfg, env_config, player_id=index, num_agents=num_agents, max_num_players=num_agents,
            num_bots=doom_spec.num_bots, render_mode=render_mode, tic_barrier=barrier,
        )
        for index in range(num_agents)
    ]  # fmt: skip
    return VizdoomMultiAgentEnv(players, barrier, _port_picker(cfg, env_config))
