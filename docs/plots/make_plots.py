"""Draw the figures of the docs from the measured tables of docs/benchmarks.md (run from the project root).

    python docs/plots/make_plots.py

The numbers below are copied from those tables (per-run FPS of both systems, same flags, alternating runs on the
2-core development machine); the script only draws them, so a figure changes only when a table does.
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "img")

# workload -> list of (ours FPS, reference FPS) pairs, from docs/benchmarks.md (commit ecfcb12, REPS=3)
MATCHED = {
    "cartpole_matched": [(13457, 4160), (15151, 4653), (11510, 4548)],
    "doom_basic_matched": [(2152, 1316), (2275, 1305), (2233, 1577)],
}


def throughput_figure(path: str) -> None:
    """Side-by-side FPS of both systems per run, with the median ratio written above each workload."""
    fig, axes = plt.subplots(1, len(MATCHED), figsize=(9, 3.6))
    for ax, (workload, pairs) in zip(axes, MATCHED.items(), strict=True):
        runs = range(len(pairs))
        ours = [o for o, _ in pairs]
        ref = [r for _, r in pairs]
        ax.bar([i - 0.2 for i in runs], ours, width=0.4, label="sample_factory (this project)", color="#3f51b5")
        ax.bar([i + 0.2 for i in runs], ref, width=0.4, label="Sample Factory 2.1.1", color="#9e9e9e")
        ratios = sorted(o / r for o, r in pairs)
        ax.set_title(f"{workload}\nmedian FPS ratio {ratios[len(ratios) // 2]:.2f}x", fontsize=10)
        ax.set_xticks(list(runs), [f"run {i}" for i in runs])
        ax.set_ylabel("env frames per second")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=9, frameon=False)
    fig.suptitle("Same flags, 2 CPU cores, alternating runs", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    throughput_figure(os.path.join(OUT, "throughput_vs_sf2.png"))
    print("wrote", os.path.join(OUT, "throughput_vs_sf2.png"))
