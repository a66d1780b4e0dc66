"""Set the TensorBoard summaries of two groups of runs side by side, averaged over each group's runs at fixed steps.

    python bench/summary_compare.py \\
        --group "ours=/tmp/seed_spread/spread_ours_mujoco_halfcheetah_s*" \\
        --group "Sample Factory 2.1.1=/tmp/seed_spread/spread_sf2_2.1.1_mujoco_halfcheetah_s*" \\
        --steps=50000,100000,200000,400000,800000,1300000 --tags=train/entropy,train/value_loss

Where one implementation learns a task more slowly than the other at equal flags (bench/seed_spread.py), its training
statistics show where the two part: this reads every run's policy-0 summaries (``<run>/.summary/0``), interpolates
each tag linearly at the given env steps (summaries are written at different steps in each run) and prints, per tag,
each group's mean over its runs and the standard error of that mean, as a Markdown table. A tag only one
implementation writes under that name can be given as ``ours_name|their_name``: the first that a run has is read.
"""

from __future__ import annotations

import argparse
import glob
import math
import statistics
import sys
from pathlib import Path

Series = list[tuple[float, float]]  # (env steps, value), in step order


def read_scalars(run_dir: Path, policy: int = 0) -> dict[str, Series]:
    """{tag: [(step, value)]} of a run's summaries for one policy; empty when the run wrote none."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    scalars: dict[str, Series] = {}
    for event_file in sorted((run_dir / ".summary" / str(policy)).glob("events.out.tfevents.*")):
        accumulator = EventAccumulator(str(event_file), size_guidance={"scalars": 0})
        accumulator.Reload()
        for tag in accumulator.Tags().get("scalars", []):
            scalars.setdefault(tag, []).extend((e.step, e.value) for e in accumulator.Scalars(tag))
    return {tag: sorted(points) for tag, points in scalars.items()}


def interpolate(series: Series, step: float) -> float | None:
    """The series' value at ``step``, linear between its neighbours; None outside the steps it covers."""
    if not series or step < series[0][0] or step > series[-1][0]:
        return None
    for (s0, v0), (s1, v1) in zip(series, series[1:], strict=False):
        if s0 <= step <= s1:
            return v0 if s1 == s0 else v0 + (v1 - v0) * (step - s0) / (s1 - s0)
    return series[-1][1]


def pick(scalars: dict[str, Series], tag: str) -> Series:
    """The series of ``tag``, or of the first of its ``|``-separated names a run has."""
    return next((scalars[name] for name in tag.split("|") if name in scalars), [])


def mean_and_sem(values: list[float]) -> tuple[float, float] | None:
    if not values:
        return None
    sem = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return statistics.fmean(values), sem


def compare(groups: dict[str, list[dict[str, Series]]], tags: list[str], steps: list[float]) -> str:
    """A Markdown table: one row per tag and group, one column per step, cells ``mean ± sem (runs)``."""
    header = "| tag | group | " + " | ".join(f"{step:,.0f}" for step in steps) + " |"
    lines = [header, "| --- | --- | " + " | ".join("---" for _ in steps) + " |"]
    for tag in tags:
        for name, runs in groups.items():
            cells = []
            for step in steps:
                values = [v for run in runs if (v := interpolate(pick(run, tag), step)) is not None]
                found = mean_and_sem(values)
                cells.append("n/a" if found is None else f"{found[0]:.4g} ± {found[1]:.2g} ({len(values)})")
            lines.append(f"| {tag} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_group(text: str) -> tuple[str, str]:
    name, sep, pattern = text.partition("=")
    if not sep or not name or not pattern:
        raise argparse.ArgumentTypeError(f"{text!r}: write NAME=GLOB, e.g. ours=/tmp/runs/spread_ours_*")
    return name, pattern


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--group", type=parse_group, action="append", required=True, help="NAME=GLOB of run folders")
    parser.add_argument("--steps", required=True, help="comma-separated env steps, e.g. 100000,500000")
    parser.add_argument("--tags", default="train/entropy,train/kl_divergence,train/value_loss,train/adv_std")
    parser.add_argument("--policy", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        steps = [float(step) for step in args.steps.split(",") if step.strip()]
    except ValueError:
        parser.error(f"--steps: {args.steps!r} is not a comma-separated list of numbers")
    groups: dict[str, list[dict[str, Series]]] = {}
    for name, pattern in args.group:
        runs = [read_scalars(Path(p), args.policy) for p in sorted(glob.glob(pattern)) if Path(p).is_dir()]
        runs = [run for run in runs if run]
        if not runs:
            print(f"--group {name}: no run folder with summaries matches {pattern!r}", file=sys.stderr)
            return 2
        groups[name] = runs
    print(compare(groups, [tag for tag in args.tags.split(",") if tag], steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
