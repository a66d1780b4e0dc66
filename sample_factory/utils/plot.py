"""Learning curves of one or more experiments as a PNG, read straight from their TensorBoard event files.

python -m sample_factory.utils.plot train_dir/cartpole_a train_dir/cartpole_b -o curves.png [--smooth=0.6]

Six panels against env steps: average episode reward, episode length, FPS, policy loss, value loss and entropy;
each experiment (and each of its policies) gets one colour in every panel. Long curves are smoothed like
TensorBoard does (``--smooth``, raw values drawn faintly behind); short ones are drawn raw with markers. Event
files are parsed with the protobuf classes that ship with tensorboardX, so neither TensorFlow nor TensorBoard is
needed.
"""

from __future__ import annotations

import argparse
import glob
import os
import struct
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

Series = dict[str, list[tuple[int, float]]]  # tag -> [(step, value), ...]

PANELS = [
    ("0_aux/avg_reward", "Average episode reward"),
    ("0_aux/avg_len", "Average episode length"),
    ("perf/_fps", "FPS (env frames / s)"),
    ("train/policy_loss", "Policy loss"),
    ("train/value_loss", "Value loss"),
    ("train/entropy", "Entropy"),
]
MIN_POINTS_TO_SMOOTH = 20  # an EMA over a handful of points mostly adds lag: short curves are drawn raw
FEW_POINTS = 12  # below this, points get markers so a curve of one or two summaries is still visible
_HEADER_BYTES, _CRC_BYTES = 12, 4  # TFRecord framing: length (8) + its CRC (4), payload, payload CRC (4)


def read_event_file(path: str, out: Series) -> None:
    """Append the scalars of one event file to ``out``; a record cut short (file being written) ends the read."""
    from tensorboardX.proto import event_pb2

    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + _HEADER_BYTES <= len(data):
        (length,) = struct.unpack("<Q", data[pos : pos + 8])
        end = pos + _HEADER_BYTES + length
        if end + _CRC_BYTES > len(data):
            break
        event = event_pb2.Event()
        event.ParseFromString(data[pos + _HEADER_BYTES : end])
        for value in event.summary.value:
            if value.HasField("simple_value"):
                out.setdefault(value.tag, []).append((event.step, value.simple_value))
        pos = end + _CRC_BYTES


def read_scalars(summary_folder: str) -> Series:
    """Every scalar under one policy's summary folder, each tag sorted by step."""
    series: Series = {}
    for path in sorted(glob.glob(os.path.join(summary_folder, "events.out.tfevents.*"))):
        read_event_file(path, series)
    return {tag: sorted(points) for tag, points in series.items()}


def experiment_curves(experiment: str) -> dict[str, Series]:
    """Label -> scalars for each policy of an experiment (``name`` for policy 0 alone, else ``name/p{id}``)."""
    name = os.path.basename(os.path.normpath(experiment))
    policies = sorted(glob.glob(os.path.join(experiment, ".summary", "*")), key=os.path.basename)
    curves = {os.path.basename(p): read_scalars(p) for p in policies if os.path.isdir(p)}
    if len(curves) == 1:
        return {name: next(iter(curves.values()))}
    return {f"{name}/p{policy}": series for policy, series in curves.items()}


def smooth(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard-style exponential moving average, debiased so the first points are not pulled towards 0."""
    if weight <= 0 or len(values) == 0:
        return values
    out, average, norm = np.empty_like(values), 0.0, 0.0
    for i, value in enumerate(values):
        average = weight * average + (1 - weight) * value
        norm = weight * norm + (1 - weight)
        out[i] = average / norm
    return out


def figure_to_numpy(figure: Any) -> np.ndarray:
    """The pixels of a matplotlib figure as a ``[height, width, 3]`` uint8 RGB array (draws the figure first).

    For putting a plot where images go: a TensorBoard image summary, a frame of a GIF (``utils.gifs.encode_gif``).
    The figure needs a canvas that renders to memory (the Agg backend; ``matplotlib.use("Agg")`` off-screen).
    """
    canvas = figure.canvas
    canvas.draw()
    if not hasattr(canvas, "buffer_rgba"):
        raise TypeError(
            f"figure_to_numpy: the figure's canvas {type(canvas).__name__} does not render to memory: "
            'call matplotlib.use("Agg") before creating the figure'
        )
    rgba = np.asarray(canvas.buffer_rgba())  # [H, W, 4], a view of the canvas's buffer
    return np.ascontiguousarray(rgba[..., :3])


def plot_curves(curves: dict[str, Series], output: str, smoothing: float, title: str | None = None) -> int:
    """Draw the panels and save the PNG; returns how many (label, panel) lines were drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter

    fig, axes = plt.subplots(2, 3, figsize=(16, 8.5), constrained_layout=True)
    colours = plt.get_cmap("tab10")
    drawn = 0
    for ax, (tag, panel_title) in zip(axes.flat, PANELS, strict=True):
        for index, (label, series) in enumerate(curves.items()):
            points = series.get(tag)
            if not points:
                continue
            _draw_series(ax, np.array(points, dtype=np.float64).T, colours(index % 10), label, smoothing)
            drawn += 1
        _style_axis(ax, panel_title, EngFormatter(sep=""))
    handles, labels = next(((h, lab) for h, lab in (ax.get_legend_handles_labels() for ax in axes.flat) if h), ([], []))
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 5), frameon=False)
    if title:
        fig.suptitle(title)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return drawn


def _draw_series(ax, steps_values: np.ndarray, colour, label: str, smoothing: float) -> None:
    """The smoothed curve on top of the faint raw one (long series), or the raw values with markers (short ones)."""
    steps, values = steps_values
    marker = "o" if len(values) < FEW_POINTS else None
    if smoothing > 0 and len(values) >= MIN_POINTS_TO_SMOOTH:
        ax.plot(steps, values, color=colour, alpha=0.25, linewidth=1)
        values = smooth(values, smoothing)
    ax.plot(steps, values, color=colour, linewidth=1.8, marker=marker, markersize=4, label=label)


def _style_axis(ax, title: str, formatter) -> None:
    ax.set_title(title)
    ax.set_xlabel("env steps")
    ax.xaxis.set_major_formatter(formatter)
    ax.grid(True, alpha=0.3)
    if not ax.lines:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiments", nargs="+", help="experiment folders (each with a .summary/ subfolder)")
    parser.add_argument("-o", "--output", default="learning_curves.png", help="PNG file to write")
    parser.add_argument("--smooth", type=float, default=0.6, help="EMA weight in [0, 1); 0 draws the raw values")
    parser.add_argument("--title", default=None, help="figure title")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not 0 <= args.smooth < 1:
        print(f"--smooth={args.smooth} must be in [0, 1)", file=sys.stderr)
        return 1
    curves: dict[str, Series] = {}
    for experiment in args.experiments:
        if not os.path.isdir(os.path.join(experiment, ".summary")):
            print(f"{experiment} has no .summary/ folder: is it an experiment folder?", file=sys.stderr)
            return 1
        curves.update(experiment_curves(experiment))
    drawn = plot_curves(curves, args.output, args.smooth, args.title)
    if not drawn:
        print(f"No scalars found in {args.experiments}; wrote an empty figure to {args.output}", file=sys.stderr)
        return 1
    print(f"Wrote {args.output}: {len(curves)} curves, {drawn} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
