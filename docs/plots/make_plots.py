"""Draw the figures of the docs: throughput from the comparison records under bench/results/ (the current set of
each workload, as docs/benchmarks.md lists it), and the architecture diagram of docs/architecture.md.

    python docs/plots/make_plots.py        (run from the project root; part of `make docs`)
"""

from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DOCS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(DOCS, "img")
sys.path.insert(0, DOCS)

import gen_results  # noqa: E402


def current_pairs() -> dict[str, list[tuple[float, float]]]:
    """workload -> [(ours FPS, reference FPS)] of its current set of comparison records."""
    records = gen_results.rec.load(results_dir=gen_results.RECORDS)
    current: dict[str, tuple[str, list[tuple[float, float]]]] = {}
    for record in records:
        if record["kind"] != "compare_sf2":
            continue
        f = record["figures"]
        set_id, pairs = current.get(record["workload"], (record["set"], []))
        if set_id != record["set"]:
            set_id, pairs = record["set"], []
        pairs.append((f["ours"]["fps"], f["reference"]["fps"]))
        current[record["workload"]] = (set_id, pairs)
    return {workload: pairs for workload, (_, pairs) in current.items()}


def throughput_figure(path: str) -> None:
    """Side-by-side FPS of both systems per run, with the median ratio written above each workload."""
    matched = current_pairs()
    fig, axes = plt.subplots(1, len(matched), figsize=(4.2 * len(matched), 3.6), squeeze=False)
    for ax, (workload, pairs) in zip(axes[0], matched.items(), strict=True):
        runs = range(len(pairs))
        ours = [o for o, _ in pairs]
        ref = [r for _, r in pairs]
        ax.bar([i - 0.2 for i in runs], ours, width=0.4, label="sample_factory (this project)", color="#3f51b5")
        ax.bar([i + 0.2 for i in runs], ref, width=0.4, label="Sample Factory 2.1.1", color="#9e9e9e")
        ratios = sorted(o / r for o, r in pairs)
        ax.set_title(f"{workload}\nmedian FPS ratio {ratios[len(ratios) // 2]:.2f}x", fontsize=10)
        ax.set_xticks(list(runs), [f"run {i}" for i in runs])
        ax.set_ylabel("env frames per second")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=9, frameon=False)
    fig.suptitle("Same flags, 2 CPU cores, alternating runs", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# (x, y, width, height, title, lines, face colour) of each box of the architecture diagram, in axis units
PROCESS, SHARED = "#e8eaf6", "#fff8e1"
ARCH_BOXES = {
    "runner": (0.5, 6.6, 3.6, 1.2, "Runner (main process)", "starts and restarts processes, stats, stop", PROCESS),
    "rollout": (
        0.5,
        3.6,
        3.6,
        1.9,
        "Rollout workers x --num_workers",
        "envs in 1-2 splits each\nstep envs, write obs/rewards",
        PROCESS,
    ),
    "inference": (
        5.4,
        3.6,
        3.7,
        1.9,
        "Inference worker(s) per policy",
        "batch of requests -> one forward\nwrite actions, values, RNN state",
        PROCESS,
    ),
    "traj": (
        2.2,
        0.4,
        5.2,
        1.6,
        "Trajectory slots (shared memory)",
        "obs, rnn_states [T+1]; actions, rewards,\nvalues, log-probs, dones ... [T]",
        SHARED,
    ),
    "learner": (
        10.3,
        3.6,
        3.9,
        1.9,
        "Learner process per policy",
        "batcher: slots -> batch buffer\nPPO / V-trace on a training thread",
        PROCESS,
    ),
    "weights": (
        10.3,
        0.4,
        3.9,
        1.6,
        "Policy weights (shared)",
        "published state dict + version;\nreaders never block the learner",
        SHARED,
    ),
}
# (start point, end point, label, curvature, label position): messages are solid arrows; rollout <-> learner bend
# over and under the inference box
ARCH_MESSAGES = [
    ((4.1, 4.85), (5.4, 4.85), "on_policy_request", 0.0, (4.75, 4.95)),
    ((5.4, 4.15), (4.1, 4.15), "on_actions_ready", 0.0, (4.75, 4.25)),
    ((3.3, 5.5), (11.2, 5.5), "on_new_trajectories (slot ids)", -0.22, (7.25, 6.6)),
    ((11.2, 3.6), (3.3, 3.6), "on_slots_freed", -0.22, (7.25, 2.05)),
]
ARCH_SHARED = [
    ("rollout", "traj"),
    ("inference", "traj"),
    ("learner", "traj"),
    ("learner", "weights"),
    ("inference", "weights"),
]


def _box_center(name: str) -> tuple[float, float]:
    x, y, w, h, *_ = ARCH_BOXES[name]
    return x + w / 2, y + h / 2


def architecture_figure(path: str) -> None:
    """Processes (blue) and shared memory (yellow); solid arrows are small index messages, dashed lines the bulk
    data that never travels in messages."""
    from matplotlib.patches import FancyBboxPatch

    fig, ax = plt.subplots(figsize=(11, 6))
    ax.set_xlim(0, 14.7)
    ax.set_ylim(0, 8.2)
    ax.axis("off")
    for x, y, w, h, title, lines, colour in ARCH_BOXES.values():
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", fc=colour, ec="#3f51b5", lw=1.2))
        ax.text(x + w / 2, y + h - 0.3, title, ha="center", va="top", fontsize=9.5, weight="bold")
        ax.text(x + w / 2, y + h / 2 - 0.25, lines, ha="center", va="center", fontsize=8.5, linespacing=1.4)
    for start, end, label, rad, (lx, ly) in ARCH_MESSAGES:
        style = dict(arrowstyle="-|>", color="#1a237e", lw=1.3, connectionstyle=f"arc3,rad={rad}")
        ax.annotate("", xy=end, xytext=start, arrowprops=style)
        ax.text(lx, ly, label, ha="center", va="bottom", fontsize=8, color="#1a237e")
    for a, b in ARCH_SHARED:
        (ax_, ay), (bx, by) = _box_center(a), _box_center(b)
        ax.plot([ax_, bx], [ay - 0.9, by + 0.75], ls="--", color="#f57f17", lw=1.1, zorder=0)
    for name in ("rollout", "inference", "learner"):  # every process reports to and is watched by the runner
        (x, y), (rx, ry) = _box_center(name), _box_center("runner")
        ax.plot([x, rx], [y + 0.95, ry - 0.6], ls=":", color="#757575", lw=1.0, zorder=0)
    ax.text(7.4, 7.5, "solid: messages over faster-fifo inboxes (indices only)\n"
            "dashed: shared-memory tensors (all bulk data)\ndotted: heartbeats, stats, restarts",
            fontsize=8.5, va="top", color="#424242")  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, draw in (("throughput_vs_sf2.png", throughput_figure), ("architecture.png", architecture_figure)):
        draw(os.path.join(OUT, name))
        print("wrote", os.path.join(OUT, name))
