"""Flags of the VizDoom family and the defaults it sets on Sample Factory's own flags."""

from __future__ import annotations

import argparse
from typing import Any

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import str2bool

# Sample Factory 2.1.1's VizDoom defaults, value for value (tests/envs/test_family_defaults.py holds them to it);
# anything given on the command line still wins. docs/vizdoom.md says what suits a small machine.
DOOM_DEFAULTS: dict[str, Any] = {
    # a decision every 4 tics (~9 per second) is fast enough for Doom and makes sampling 4x cheaper
    "env_frameskip": 4,
    # pixels arrive as uint8: scaled to [0, 1], then standardised per pixel with running statistics. The static
    # parts of a scenario's view turn into zeros and what moves (monsters, projectiles) stands out
    "obs_subtract_mean": 0.0,
    "obs_scale": 255.0,
    "normalize_input": True,
    "normalize_returns": True,
    "exploration_loss": "symmetric_kl",
    "exploration_loss_coeff": 0.001,
    "ppo_clip_value": 0.2,
    # ViZDoom starts are slow and a match waits for all its players: be patient before calling a worker stuck
    "heartbeat_reporting_interval": 600,
    # watching (enjoy): every tic rendered, each action repeated to the trained rate, at the game's real speed
    # (35 tics per second). Set for training too, so config.json carries them to enjoy, as in Sample Factory 2.
    "eval_env_frameskip": 1,
    "fps": 35,
}


def add_doom_env_args(parser: argparse.ArgumentParser) -> None:
    """The ``--res_w``-style flags of the VizDoom envs (saved in config.json, so enjoy rebuilds the same env)."""
    group = parser.add_argument_group("VizDoom", "Flags of the doom_* envs.")
    group.add_argument("--res_w", type=int, default=128, help="Width of the observation after downscaling.")
    group.add_argument("--res_h", type=int, default=72, help="Height of the observation after downscaling.")
    group.add_argument(
        "--wide_aspect_ratio",
        type=str2bool,
        default=False,
        help="Render 16:9 (256x144) instead of 4:3 (160x120) before downscaling: a wider view, undistorted at 128x72.",
    )
    group.add_argument(
        "--num_agents",
        type=int,
        default=-1,
        help="Agents in a self-play match (doom_duel, doom_deathmatch_full); -1 keeps the env's default.",
    )
    group.add_argument(
        "--num_bots", type=int, default=-1, help="Built-in bots in deathmatch envs; -1 keeps the env's default."
    )
    group.add_argument(
        "--num_humans",
        type=int,
        default=0,
        help="Human players joining a self-play match; only 0 is supported (an error names it otherwise).",
    )
    group.add_argument(
        "--start_bot_difficulty",
        type=int,
        default=None,
        help="Bot skill 0..100 (aiming, reaction, ...); default: the skills of the bots.cfg shipped with ViZDoom.",
    )
    group.add_argument(
        "--timelimit",
        type=float,
        default=None,
        help="Episode length in minutes of game time; default: the scenario's own (4 minutes for deathmatch).",
    )
    group.add_argument(
        "--doom_base_port",
        type=int,
        default=0,
        help="First UDP port of self-play/bot games (port = base + env_id, busy ports skipped); 0: random per run.",
    )


def add_doom_env_eval_args(parser: argparse.ArgumentParser) -> None:
    """Flags of watching an agent (enjoy): where to record the games it plays as ViZDoom demos."""
    group = parser.add_argument_group("VizDoom evaluation", "Flags of watching doom_* agents.")
    group.add_argument(
        "--record_to",
        type=str,
        default=None,
        help="Folder for a ViZDoom demo (.lmp) of every episode played; replay one with "
        "python -m sf_examples.vizdoom.doom.doom_play_demo --demo_path=FILE.",
    )


def doom_override_defaults(parser: argparse.ArgumentParser, evaluation: bool = False) -> None:
    """Family defaults (see ``DOOM_DEFAULTS``), the same for training and watching."""
    del evaluation  # --eval_env_frameskip and --fps are flags of enjoy only; training keeps their values in its config
    parser.set_defaults(**DOOM_DEFAULTS)


def default_doom_cfg(algo: str = "APPO", env: str = "env", experiment: str = "test") -> Config:
    """A complete config with the family's flags and defaults, as if only algo, env and experiment were passed
    (Sample Factory 2's function for creating a Doom env outside a training run, e.g. in tests)."""
    argv = [f"--algo={algo}", f"--env={env}", f"--experiment={experiment}"]
    parser, _ = parse_sf_args(argv)
    add_doom_env_args(parser)
    doom_override_defaults(parser)
    return parse_full_cfg(parser, argv)
