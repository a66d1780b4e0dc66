"""Play a VizDoom env yourself: keyboard and mouse in ViZDoom's window, at the game's real speed.

    python -m sf_examples.vizdoom.doom.play_doom --env=doom_basic --num_episodes=3

Needs a display; each episode's reward is printed. ``--record_to=DIR`` keeps a demo of every episode.
"""

from __future__ import annotations

import argparse
import sys

from sample_factory.utils.utils import log
from sf_examples.vizdoom.doom.doom_params import default_doom_cfg
from sf_examples.vizdoom.doom.doom_utils import make_doom_env
from sf_examples.vizdoom.doom.scenarios import DOOM_SPECS
from sf_examples.vizdoom.doom.wrappers.step_human_input import StepHumanInput, require_display


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="doom_basic", choices=sorted(DOOM_SPECS), help="VizDoom env to play.")
    parser.add_argument("--num_episodes", type=int, default=1, help="Episodes to play.")
    parser.add_argument("--record_to", default=None, help="Folder for a demo (.lmp) of every episode.")
    args = parser.parse_args()
    try:
        require_display("play_doom")
    except RuntimeError as exc:
        log.error("%s", exc)
        return 1
    cfg = default_doom_cfg(env=args.env)
    cfg.env_frameskip, cfg.record_to = 1, args.record_to
    env = StepHumanInput(make_doom_env(args.env, cfg, None, "human"))
    try:
        for episode in range(args.num_episodes):
            env.reset()
            total, done = 0.0, False
            while not done:
                _, reward, terminated, truncated, _ = env.step(None)
                total += float(reward)
                done = terminated or truncated
            log.info("episode %d: reward %.3f", episode + 1, total)
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
