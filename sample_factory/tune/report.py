"""What the tuner prints: a Markdown table of every trial, what it skipped and why, and the command to run.

The table is Markdown so it reads in a terminal and pastes into notes or docs as it is. The recommended command is
always the last line of the output, so a script can take it with ``tail -n 1``.
"""

from __future__ import annotations

from sample_factory.tune.options import TuneOptions, recommended_command
from sample_factory.tune.search import mean_fps
from sample_factory.tune.tuner import TrialRow, TuneReport

HEADER = (
    "| # | trial | workers | envs/worker | splits | batched | policy workers | batch | FPS | FPS from | CPU cores "
    "| peak RSS | where time went | outcome |"
)


def _row(row: TrialRow) -> str:
    s, r = row.settings, row.result
    knobs = (
        [s.num_workers, s.num_envs_per_worker, s.worker_num_splits, s.batched_sampling, s.policy_workers_per_policy,
         s.batch_size]
        if s is not None else ["?"] * 6
    )  # fmt: skip
    fps = f"{r.fps.fps:.0f}" if r.fps else "-"
    method = r.fps.method if r.fps else "-"
    cpu = f"{r.cpu_cores:.2f}" if r.cpu_cores is not None else "-"
    rss = f"{r.peak_rss / 2**30:.2f} GiB" if r.peak_rss else "-"
    cells = [row.index, row.label, *knobs, fps, method, cpu, rss, r.profile, r.outcome]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(report: TuneReport) -> str:
    separator = "|" + "---|" * HEADER.count(" | ") + "---|"
    return "\n".join([HEADER, separator, *(_row(row) for row in report.rows)])


def summary(report: TuneReport) -> str:
    """Lines after the table: the machine, the skipped candidates, the means, the choice and why."""
    machine = report.machine
    lines = [
        f"Machine: {machine.cores} cores, {machine.available_memory / 2**30:.1f} GiB available; "
        f"tuning took {report.wall_s:.0f} s, {len(report.rows)} trials.",
    ]
    for skipped in report.skipped:
        lines.append(f"Skipped {skipped.settings.short()} ({skipped.move}): {skipped.reason}")
    chosen, base = report.choice.settings, report.baseline
    lines.append(
        f"Your settings: {mean_fps(report.measurements, base):.0f} FPS; chosen: {chosen.short()}, "
        f"{mean_fps(report.measurements, chosen):.0f} FPS (mean of {len(report.measurements.get(chosen, []))} trials)"
        f": {report.choice.reason}."
    )
    return "\n".join(lines)


def render(report: TuneReport, opts: TuneOptions) -> str:
    """Everything printed at the end; the last line is the command."""
    return "\n".join([table(report), "", summary(report), "", recommended_command(opts, report.choice.settings)])
