"""Following submitted Slurm jobs to their end (``--slurm_wait=True``), resubmissions included.

A job's Slurm id changes at every resubmission, so jobs are followed by name: the experiment is unfinished while
``squeue`` lists a job of that name, and finished once its status file (written by the job script) has a
``final`` line. ``squeue`` is queried before the status files are read, and a job script writes its ``final`` line
before it exits, so an experiment absent from the queue and still without a ``final`` line really ended without
one (cancelled, killed by Slurm, node failure) and is reported so instead of being waited for forever.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from sample_factory.launcher.launcher_utils import StatusLine, format_duration, format_table
from sample_factory.launcher.slurm_script import SlurmJobFiles

POLL_PERIOD_S = 1.0
# polls in a row without the job in squeue and without a final line before it is declared gone
MISSING_POLLS_LIMIT = 2
_ATTEMPT_RE = re.compile(r"^attempt (\d+) \(job (\S+)\) started")
_FINAL_RE = re.compile(r"^final (exit (-?\d+)|timeout|cancelled|failed)")


@dataclass
class TrackedJob:
    """What the launcher knows about one submitted experiment."""

    experiment: str
    job_name: str
    files: SlurmJobFiles
    job_id: str | None
    status: str = "pending"  # pending | running | done | failed | timeout | cancelled | vanished
    exit_code: str = "-"
    attempts: int = 0
    missing_polls: int = 0
    detail: str = ""

    def finished(self) -> bool:
        return self.status in ("done", "failed", "timeout", "cancelled", "vanished")


def _current_lines(path: str) -> list[str]:
    """Status lines since the latest submission by the launcher (older launches of the same run are history)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    starts = [i for i, line in enumerate(lines) if line.startswith("=== submitted")]
    return lines[starts[-1] + 1 :] if starts else lines


def refresh_from_status_file(job: TrackedJob) -> None:
    """Attempts, current job id and the final outcome from the lines the job script appended."""
    for line in _current_lines(job.files.status):
        attempt = _ATTEMPT_RE.match(line)
        if attempt:
            job.attempts, job.job_id = int(attempt.group(1)), attempt.group(2)
        final = _FINAL_RE.match(line)
        if final:
            job.detail = line
            if final.group(2) is not None:
                job.exit_code = final.group(2)
                job.status = "done" if final.group(2) == "0" else "failed"
            else:
                job.status = final.group(1)


def squeue_states(job_names: list[str]) -> dict[str, str] | None:
    """Job name -> Slurm state (PENDING, RUNNING, ...) of the queued jobs; None when squeue cannot answer."""
    cmd = ["squeue", "--noheader", "--format=%j|%T", f"--name={','.join(job_names)}"]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    states = {}
    for line in result.stdout.splitlines():
        name, _, state = line.strip().rpartition("|")
        if name:
            states[name] = state
    return states


def _update(job: TrackedJob, queue: dict[str, str] | None) -> None:
    refresh_from_status_file(job)
    if job.finished() or queue is None:
        return
    if job.job_name in queue:
        job.missing_polls = 0
        job.status = "running" if queue[job.job_name] in ("RUNNING", "COMPLETING") else "pending"
        return
    job.missing_polls += 1
    if job.missing_polls >= MISSING_POLLS_LIMIT:
        job.status = "cancelled" if os.path.exists(job.files.cancelled) else "vanished"
        job.detail = f"left the queue without a final status line: see {job.files.log}"


def _counts(jobs: list[TrackedJob]) -> dict[str, int]:
    states = ("pending", "running", "done", "failed")
    counts = {s: sum(j.status == s for j in jobs) for s in states}
    other = sum(j.status not in states for j in jobs)
    return counts | ({"other": other} if other else {})


def wait_for_jobs(jobs: list[TrackedJob], should_stop: Callable[[], bool], status: StatusLine | None = None) -> None:
    """Poll until every job has finished (or ``should_stop()``), printing a line whenever the counts change."""
    status = status or StatusLine()
    start = time.monotonic()
    names = [j.job_name for j in jobs]
    while jobs and not should_stop():
        queue = squeue_states(names)
        for job in jobs:
            was = job.status
            _update(job, queue)
            if job.finished() and was != job.status:
                status.print(f"[launcher] {job.status} {job.experiment} after {job.attempts} attempt(s)")
        status.update(_counts(jobs), time.monotonic() - start)
        if all(j.finished() for j in jobs):
            break
        time.sleep(POLL_PERIOD_S)
    status.close()
    print(f"[launcher] waited {format_duration(time.monotonic() - start)}")


def final_table(jobs: list[TrackedJob]) -> str:
    header = ["experiment", "status", "exit", "attempts", "last job", "log"]
    rows = [[j.experiment, j.status, j.exit_code, str(j.attempts), j.job_id or "-", j.files.log] for j in jobs]
    notes = [f"{j.experiment}: {j.detail}" for j in jobs if j.status != "done" and j.detail]
    return "\n".join([format_table(header, rows), *notes])
