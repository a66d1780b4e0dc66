"""The EnvPool Atari envs (``envpool_atari_<game>``, the 57 games of the Atari-57 benchmark) and their defaults."""

from __future__ import annotations

import argparse
from typing import Any

from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sf_examples.atari.atari_params import PPO_ATARI_UPDATE
from sf_examples.envpool.envpool_utils import BATCHED_DEFAULTS, add_envpool_args, make_batched_env
from sf_examples.envpool.envpool_wrappers import EnvPoolBatchedEnv

PREFIX = "envpool_atari_"
# EnvPool/ALE game ids of the Atari-57 benchmark
ATARI_57 = (
    "Alien Amidar Assault Asterix Asteroids Atlantis BankHeist BattleZone BeamRider Berzerk Bowling Boxing Breakout "
    "Centipede ChopperCommand CrazyClimber Defender DemonAttack DoubleDunk Enduro FishingDerby Freeway Frostbite "
    "Gopher Gravitar Hero IceHockey Jamesbond Kangaroo Krull KungFuMaster MontezumaRevenge MsPacman NameThisGame "
    "Phoenix Pitfall Pong PrivateEye Qbert Riverraid RoadRunner Robotank Seaquest Skiing Solaris SpaceInvaders "
    "StarGunner Surround Tennis TimePilot Tutankham UpNDown Venture VideoPinball WizardOfWor YarsRevenge Zaxxon"
).split()
_SHORT_NAMES = {"MontezumaRevenge": "montezuma"}  # Sample Factory 2's name for it
# env name -> EnvPool task id
ENVPOOL_ATARI_ENVS: dict[str, str] = {PREFIX + _SHORT_NAMES.get(game, game.lower()): f"{game}-v5" for game in ATARI_57}
# the games every test trains on (the others are created and stepped)
STANDARD_GAMES = ("breakout", "pong", "beamrider", "qbert", "spaceinvaders", "seaquest", "montezuma")

# Preprocessing done by EnvPool in C++: up to 30 no-op starts, frame skip (--env_frameskip, 4) with max-pooling of the
# last two frames, 84x84 grayscale, the last --env_framestack (4) frames stacked, episodes capped at 108k frames.
# Rewards are clipped to [-1, 1] for training; reported scores are the unclipped game scores. A lost life does not
# end the episode: the sampler reports each finished episode as a whole game (see docs/envpool.md).
ENVPOOL_ATARI_TASK_KWARGS: dict[str, Any] = {
    "noop_max": 30,
    "img_height": 84,
    "img_width": 84,
    "gray_scale": True,
    "reward_clip": True,
    "episodic_life": False,
    "repeat_action_probability": 0.0,
}

# Sample Factory 2.1.1's EnvPool Atari defaults, value for value (tests/envs/test_family_defaults.py holds them to
# it): PPO's Atari settings (Schulman et al. 2017) on 4 asynchronous workers of 64 envs each. The command line still
# wins; docs/envpool.md says what suits a small machine.
ENVPOOL_ATARI_DEFAULTS: dict[str, Any] = {
    **BATCHED_DEFAULTS,
    **PPO_ATARI_UPDATE,
    "serial_mode": False,
    "async_rl": True,
    "num_workers": 4,
    "env_agents": 64,
    # EnvPool skips and stacks frames itself; these make it do so, and make FPS and --train_for_env_steps count frames
    "env_frameskip": 4,
    "env_framestack": 4,
    "summaries_use_frameskip": True,
    # the env reports whole-game raw scores in info["episode"] (unclipped game scores)
    "use_record_episode_statistics": True,
    "reward_scale": 1.0,
    "encoder_conv_architecture": "convnet_atari",
    "nonlinearity": "relu",
    "obs_scale": 255.0,
    "normalize_input": False,
    "normalize_returns": False,  # clipped rewards already keep value targets small
    "use_rnn": False,  # 4 stacked frames carry the motion
    "recurrence": 1,
    "adaptive_stddev": False,
}


def envpool_atari_override_defaults(env_name: str, parser: argparse.ArgumentParser) -> None:
    """The family's defaults (``ENVPOOL_ATARI_DEFAULTS``), the same for every game."""
    del env_name
    parser.set_defaults(**ENVPOOL_ATARI_DEFAULTS)


def add_atari_env_args(_env: str | None, p: argparse.ArgumentParser, evaluation: bool = False) -> None:
    """Sample Factory 2's name for the family's flags: the EnvPool flags (``--env_agents``, threads)."""
    del evaluation  # the same flags for training and watching
    add_envpool_args(_env, p)


def atari_override_defaults(_env: str | None, parser: argparse.ArgumentParser) -> None:
    """Sample Factory 2's name for :func:`envpool_atari_override_defaults`."""
    envpool_atari_override_defaults(_env, parser)


def make_envpool_atari_env(
    full_env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> EnvPoolBatchedEnv:
    """One EnvPool instance of ``--env_agents`` copies of the game; frames of env 0 with ``render_mode="rgb_array"``."""
    frames = {"frame_skip": _frames(cfg, "env_frameskip"), "stack_num": _frames(cfg, "env_framestack")}
    return make_batched_env(
        ENVPOOL_ATARI_ENVS[full_env_name], cfg, env_config, render_mode, **ENVPOOL_ATARI_TASK_KWARGS, **frames
    )


def _frames(cfg: Config | None, name: str) -> int:
    """``--env_frameskip`` / ``--env_framestack`` for EnvPool (the family's 4 when there is no cfg)."""
    value = getattr(cfg, name, None) if cfg is not None else None
    value = ENVPOOL_ATARI_DEFAULTS[name] if value is None else int(value)
    if value < 1:
        raise ValueError(f"--{name}={value} must be >= 1")
    return value
