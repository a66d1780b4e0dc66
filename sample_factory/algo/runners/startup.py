"""Where the seconds of a run go before the first collected frame and after the last one.

Short runs (tests, tuner trials, sweeps of short experiments, debugging) spend a large share of their time starting
and stopping: Python and torch imports, creating an env to read its spaces, starting the worker processes, joining
them. :class:`RunTimeline` records wall-clock milestones from the moment the process was created (so the imports
before any of our code ran are counted) and logs one line when experience collection starts and one at the end,
e.g. ``Start-up: 4.6 s from the command to the first collected frame (imports and parsing 2.1, env info 0.6,
buffers 0.1, workers 1.8)``.
"""

from __future__ import annotations

import os
import time

import psutil

from sample_factory.utils.logging_setup import log

START_UP_PHASES = (
    ("imports", "imports and parsing"),
    ("env_info", "env info"),
    ("buffers", "buffers"),
    ("workers", "workers"),
)
SHUT_DOWN_PHASES = (("components_stopped", "components"), ("processes_joined", "processes"))
# the precise start and psutil's may differ by up to a second (psutil's boot time is whole seconds), not more
MAX_CLOCK_DISAGREEMENT_S = 1.5


def process_start_time() -> float:
    """When this process was created (wall clock, to the kernel's clock tick), or now where that cannot be read.

    The age of the process is read against the boot-time clock, as the kernel keeps it: ``psutil``'s
    ``create_time()`` adds the start to the boot time of ``/proc/stat``, which is whole seconds, so its answer is
    early by the boot's fraction of a second (up to a second added to every start-up figure of the machine).
    """
    try:
        coarse: float | None = psutil.Process().create_time()
    except psutil.Error:  # no /proc to read it from
        coarse = None
    age = _process_age()
    if age is not None:
        precise = time.time() - age
        # the two differ by the boot's fraction of a second; more means the clocks disagree (a time namespace)
        if coarse is None or abs(precise - coarse) < MAX_CLOCK_DISAGREEMENT_S:
            return precise
    return coarse if coarse is not None else time.time()  # else count from now


def _process_age() -> float | None:
    """Seconds since this process was created (Linux), or None where that cannot be read."""
    if not hasattr(time, "CLOCK_BOOTTIME"):
        return None
    try:
        with open("/proc/self/stat", "rb") as f:
            # the fields after the command name; the process's start, in clock ticks since boot, is field 22
            fields = f.read().rsplit(b")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    return age if age >= 0.0 else None


class RunTimeline:
    """Wall-clock milestones of one run; ``mark(name)`` records the first time each is reached."""

    def __init__(self, started_at: float | None = None) -> None:
        self.started_at = process_start_time() if started_at is None else started_at
        self.marks: dict[str, float] = {}

    def mark(self, name: str) -> None:
        self.marks.setdefault(name, time.time())

    def start_up_line(self) -> str:
        """How long from the command to the first collected frame, by phase (those marked)."""
        return "Start-up: " + self._phases("the command", self.started_at, START_UP_PHASES, "the first collected frame")

    def shut_down_line(self) -> str:
        """How long from the stop request to the end, by phase."""
        start = self.marks.get("stop_requested", time.time())
        return "Shut-down: " + self._phases("the stop request", start, SHUT_DOWN_PHASES, "the end")

    def _phases(self, first: str, start: float, phases: tuple, last: str) -> str:
        parts, previous = [], start
        for name, label in phases:
            at = self.marks.get(name)
            if at is not None:
                parts.append(f"{label} {at - previous:.1f}")
                previous = at
        end = self.marks.get(phases[-1][0], time.time())
        return f"{end - start:.1f} s from {first} to {last} ({', '.join(parts)})"

    def log_start_up(self) -> None:
        log.info(self.start_up_line())

    def log_shut_down(self) -> None:
        log.info(self.shut_down_line())
