"""Replay a ViZDoom demo (``.lmp``, recorded with ``--record_to``) in the game's window.

    python -m sf_examples.vizdoom.doom.doom_play_demo --env=doom_basic --demo_path=demos/doom_basic_ep0000.lmp

A demo replays only in the scenario it was recorded in, so ``--env`` must name that env. ``--no_render`` replays
without a window (no display needed) and prints the length and reward of the replayed episode.
"""

from __future__ import annotations

import argparse
import os
import sys

from sample_factory.utils.utils import log
from sf_examples.vizdoom.doom.game_setup import GameOptions, configure_game
from sf_examples.vizdoom.doom.lifecycle import prepare_engine_start, register_game, release_game
from sf_examples.vizdoom.doom.scenarios import DOOM_SPECS, doom_spec
from sf_examples.vizdoom.doom.wrappers.step_human_input import require_display


def replay_demo(env_name: str, demo_path: str, render: bool = False) -> dict[str, float]:
    """Replay ``demo_path`` in ``env_name``'s scenario; the episode's tics and total reward."""
    if not os.path.isfile(demo_path):
        raise FileNotFoundError(f"--demo_path={demo_path} does not exist: record one with --record_to=DIR")
    spec = doom_spec(env_name)
    if spec.deathmatch:
        raise ValueError(f"{env_name}: replaying networked deathmatch demos is not supported; use a single-player env")
    game = configure_game(spec, GameOptions(window_visible=render), None)
    prepare_engine_start()
    game.init()
    register_game(game)
    tics, reward = 0, 0.0
    try:
        game.replay_episode(demo_path)
        while not game.is_episode_finished():
            game.advance_action()
            tics += 1
            reward += game.get_last_reward()
    finally:
        release_game(game)
    return {"tics": float(tics), "reward": reward}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="doom_basic", choices=sorted(DOOM_SPECS), help="Env the demo was recorded in.")
    parser.add_argument("--demo_path", required=True, help="The .lmp file to replay.")
    parser.add_argument("--no_render", action="store_true", help="Replay without a window (no display needed).")
    args = parser.parse_args()
    try:
        if not args.no_render:
            require_display("doom_play_demo (or pass --no_render)")
        result = replay_demo(args.env, args.demo_path, render=not args.no_render)
    except (RuntimeError, FileNotFoundError, ValueError) as exc:
        log.error("%s", exc)
        return 1
    log.info("replayed %d tics, reward %.3f", result["tics"], result["reward"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
