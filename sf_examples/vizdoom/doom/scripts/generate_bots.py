"""Write a ``bots.cfg`` for ViZDoom with bots of graded skill (``+viz_bots_path`` points a game at it).

python -m sf_examples.vizdoom.doom.scripts.generate_bots --num_bots=10 > my_bots.cfg
"""

from __future__ import annotations

import argparse
import sys

# ZDoom bot skill stats, each 0..100; "isp" is how well a bot keeps its aim on a moving target
SKILL_STATS = ("aiming", "perfection", "reaction", "isp")
COLORS = ("40 cf 00", "b0 b0 b0", "02 00 ff", "ff 00 00", "ff ff 00", "ff 80 00", "ff 00 ff", "00 ff ff")


def bot_param(difficulty: int) -> dict[str, int]:
    """The skill stats of a bot of ``difficulty`` (0 = harmless, 100 = the game's best)."""
    if not 0 <= difficulty <= 100:
        raise ValueError(f"difficulty={difficulty} must be within 0..100")
    return {stat: int(difficulty) for stat in SKILL_STATS}


def fmt_bot(difficulty: int, idx: int) -> str:
    """One ``{ ... }`` entry of bots.cfg: bot number ``idx`` with the stats of ``difficulty``."""
    stats = "".join(f"\t{stat} {value}\n" for stat, value in bot_param(difficulty).items())
    return f'{{\n\tname "Bot{idx}_d{difficulty}"\n{stats}\tcolor "{COLORS[idx % len(COLORS)]}"\n\tskin base\n}}\n'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num_bots", type=int, default=10, help="Bots per difficulty level.")
    parser.add_argument("--difficulties", type=int, nargs="+", default=[10, 30, 50, 70, 90], help="Skill levels.")
    args = parser.parse_args()
    idx = 0
    for difficulty in args.difficulties:
        for _ in range(args.num_bots):
            sys.stdout.write(fmt_bot(difficulty, idx) + "\n")
            idx += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
