"""Draw a learning curve (average episode reward against env frames) from a training run's console log.

    python docs/plots/curve_from_log.py RUN.log OUT.png "TITLE"

It reads the runner's periodic lines ``Fps is (...). Total num frames: N`` and the ``Avg episode reward: [(0, 'R')]``
line that follows each of them (policy 0), so any run's saved stdout will do, no TensorBoard files needed.
"""

from __future__ import annotations

import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

_FRAMES = re.compile(r"Total num frames: (\d+)")
_REWARD = re.compile(r"Avg episode reward: \[\(0, '([-0-9.naif]+)'\)")


def read_curve(path: str) -> tuple[list[int], list[float]]:
    """(frames, reward) pairs: each reward line is paired with the frame count of the status line before it."""
    frames: list[int] = []
    rewards: list[float] = []
    last_frames = None
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            if (m := _FRAMES.search(line)) is not None:
                last_frames = int(m.group(1))
            elif (m := _REWARD.search(line)) is not None and last_frames is not None:
                frames.append(last_frames)
                rewards.append(float(m.group(1)))
    return frames, rewards


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__)
        return 2
    log_path, out, title = argv
    frames, rewards = read_curve(log_path)
    if not frames:
        print(f"no 'Total num frames' / 'Avg episode reward' lines in {log_path}")
        return 1
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot([f / 1e6 for f in frames], rewards, color="#3f51b5")
    ax.set_xlabel("env frames (millions)")
    ax.set_ylabel("average episode reward")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"{out}: {len(frames)} points, last {rewards[-1]} at {frames[-1]} frames")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
