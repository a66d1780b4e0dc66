"""One trial: run the real training script in benchmark mode, measure it, stop it, leave nothing behind.

The script runs in its own session (process group) with ``--benchmark=True`` in a folder of the tuner's temporary
train_dir. The trial reads its output as it comes: once a status line arrives ``warmup_s`` after sampling began, it
lets the run go on for ``measure_s`` and then sends SIGTERM to the main process, which stops the run in order and
prints its profile trees. Whatever happens, at ``deadline`` the whole group gets SIGKILL, is waited for, and the
``/dev/shm`` files its processes had mapped are removed. CPU use and memory are sampled with psutil over the
process tree meanwhile.
"""

from __future__ import annotations

import os
import queue
import signal
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field

import psutil

from sample_factory.tune.logparse import (
    FpsFigure,
    TrialLog,
    fps_figure,
    sampling_seconds,
    steady_start,
    where_time_went,
)

POLL_S = 0.5
STOP_GRACE_S = 25.0  # an orderly stop takes 1-5 s, up to the runner's own 20 s stop timeout on a loaded machine
KILL_WAIT_S = 5.0
LOG_TAIL_LINES = 30


@dataclass
class TrialPlan:
    command: list[str]
    warmup_s: float
    measure_s: float
    deadline: float  # time.time() by which every process of the trial is gone
    log_path: str


@dataclass
class Usage:
    """psutil samples of the trial's process tree."""

    samples: list[tuple[float, float]] = field(default_factory=list)  # (time, total CPU seconds)
    peak_rss: int = 0
    child_rss_at_peak: list[int] = field(default_factory=list)
    shm_files: set[str] = field(default_factory=set)

    def cores_between(self, start: float, end: float) -> float | None:
        """Mean number of cores busy in [start, end] (CPU seconds over wall seconds)."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2 or inside[-1][0] - inside[0][0] <= 0:
            return None
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


@dataclass
class TrialResult:
    fps: FpsFigure | None
    cpu_cores: float | None
    peak_rss: int
    median_child_rss: int
    max_child_rss: int
    profile: str
    wall_s: float
    outcome: str  # "ok", "killed at deadline", "exited early (code N)", "failed (code N)"
    log_tail: list[str]


def run_trial(plan: TrialPlan) -> TrialResult:
    """Run ``plan.command`` until measured, or until ``plan.deadline``; always reap its whole process group.

    Ctrl-C of the tuner stops the trial in order (it runs in a session of its own, so it does not see the signal)
    and then propagates.
    """
    started = time.time()
    with open(plan.log_path, "w", encoding="utf-8") as log_file:
        proc = subprocess.Popen(
            plan.command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "SF_LOG_LEVEL": "INFO"},
        )
        watcher = _Watcher(proc, plan, log_file)
        try:
            watcher.watch()
        except BaseException:
            if watcher.stop_sent_at is None:
                watcher.stop("interrupted")
            watcher.reap(until=min(plan.deadline, time.time() + STOP_GRACE_S))
            raise
        watcher.reap(until=min(plan.deadline, (watcher.stop_sent_at or plan.deadline) + STOP_GRACE_S))
    return watcher.result(time.time() - started)


class _Watcher:
    """Paces one trial: reads its output, samples its processes, stops it, kills it at the deadline."""

    def __init__(self, proc: subprocess.Popen, plan: TrialPlan, log_file) -> None:
        self.proc, self.plan, self.log_file = proc, plan, log_file
        self.log = TrialLog()
        self.usage = Usage()
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.tail: list[str] = []
        self.processes: dict[int, psutil.Process] = {}
        self.stop_sent_at: float | None = None
        self.stop_reason = ""
        self.measure_from: float | None = None
        self.killed = False
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def watch(self) -> None:
        # time to stop in order before the deadline: the full grace, but never most of a short trial
        soft_deadline = self.plan.deadline - min(STOP_GRACE_S, 0.25 * (self.plan.deadline - time.time()))
        while not self._drain():  # until the output closes: the run ended
            now = time.time()
            self._sample(now)
            if self.stop_sent_at is not None:
                self._note_shm_files()  # files made while stopping; too costly to read every poll while measuring
            if now >= self.plan.deadline or (self.stop_sent_at is not None and now >= self.stop_sent_at + STOP_GRACE_S):
                return
            if self.stop_sent_at is None and self._measured(now):
                self.stop("measured")
            elif self.stop_sent_at is None and now >= soft_deadline:
                self.stop("deadline")

    def _drain(self) -> bool:
        """Take every line that arrived within one poll period; True once the output has closed."""
        if self.closed:
            return True
        try:
            line = self.lines.get(timeout=POLL_S)
        except queue.Empty:
            return False
        while line is not None:
            self._take(line)
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return False
        self.closed = True
        return True

    def _take(self, line: str) -> None:
        self.log_file.write(line)
        self.log_file.flush()  # readable while the trial runs: ``tail -f`` it to see why a trial is slow
        self.tail = (self.tail + [line.rstrip("\n")])[-LOG_TAIL_LINES:]
        point = self.log.feed(line)
        if point is not None and self.measure_from is None and steady_start(self.log, self.plan.warmup_s) is point:
            self.measure_from = time.time()

    def _measured(self, now: float) -> bool:
        return self.measure_from is not None and now - self.measure_from >= self.plan.measure_s

    def stop(self, reason: str) -> None:
        self._note_shm_files()
        self.stop_sent_at, self.stop_reason = time.time(), reason
        try:
            self.proc.send_signal(signal.SIGTERM)  # the runner stops in order; its children ignore SIGTERM
        except ProcessLookupError:
            pass

    def _sample(self, now: float) -> None:
        try:
            root = psutil.Process(self.proc.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        cpu, rss = 0.0, []
        for process in tree:
            self.processes.setdefault(process.pid, process)
            try:
                times = process.cpu_times()
                cpu += times.user + times.system
                rss.append(process.memory_info().rss)
            except psutil.Error:
                continue
        self.usage.samples.append((now, cpu))
        if sum(rss) > self.usage.peak_rss:
            self.usage.peak_rss, self.usage.child_rss_at_peak = sum(rss), rss[1:]

    def _note_shm_files(self) -> None:
        """Files in /dev/shm that the trial's processes have mapped: removed after a kill if they remain."""
        for pid in list(self.processes):
            try:
                with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
                    for row in maps:
                        path = row.rstrip("\n").split(" ", 5)[-1].strip()
                        if path.startswith("/dev/shm/"):
                            self.usage.shm_files.add(path.removesuffix(" (deleted)"))
            except OSError:
                continue

    def reap(self, until: float) -> None:
        """Wait for an orderly exit until ``until``, then SIGKILL the group; remove the shm files it left."""
        self._note_shm_files()
        while self.proc.poll() is None and time.time() < until:
            self._drain()
        if self.proc.poll() is None or self._group_alive():
            self.killed = self.proc.poll() is None
            _killpg(self.proc.pid)
        try:
            self.proc.wait(timeout=KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
        self._wait_group_gone()
        end = time.time() + KILL_WAIT_S  # a process that left the group could hold the pipe open: do not wait on it
        while not self._drain() and time.time() < end:
            pass
        for path in self.usage.shm_files:
            if os.path.exists(path):
                os.unlink(path)

    def _group_alive(self) -> bool:
        """Processes of the trial outlive its main process for a moment (feeder threads, the resource tracker)."""
        end = time.time() + 2.0
        while time.time() < end:
            if not _alive(self.processes.values(), self.proc.pid):
                return False
            time.sleep(0.1)
        return True

    def _wait_group_gone(self) -> None:
        end = time.time() + KILL_WAIT_S
        while _alive(self.processes.values(), self.proc.pid) and time.time() < end:
            time.sleep(0.1)

    def result(self, wall_s: float) -> TrialResult:
        figure = fps_figure(self.log, self.plan.warmup_s)
        cpu = None
        if figure is not None and figure.window is not None and self.measure_from is not None:
            cpu = self.usage.cores_between(self.measure_from, self.stop_sent_at or time.time())
        sampling = sampling_seconds(self.log)
        rss = self.usage.child_rss_at_peak or [0]
        return TrialResult(
            fps=figure,
            cpu_cores=cpu,
            peak_rss=self.usage.peak_rss,
            median_child_rss=int(statistics.median(rss)),
            max_child_rss=max(rss),
            profile=where_time_went(self.log, sampling),
            wall_s=wall_s,
            outcome=self._outcome(),
            log_tail=self.tail,
        )

    def _outcome(self) -> str:
        code = self.proc.returncode
        if self.killed:
            return "killed (no orderly stop)" if self.stop_reason == "measured" else "killed at deadline"
        if self.stop_sent_at is None:
            return f"failed (exit code {code})" if code else "exited before it was measured"
        if self.stop_reason == "deadline":
            return "stopped at deadline before a steady window" if self.measure_from is None else "ok"
        return "ok" if self.stop_reason == "measured" else self.stop_reason


def _alive(processes, root_pid: int) -> bool:
    """Any process of the trial still running (zombies are dead: their parent reaps them)."""
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                return True
        except psutil.Error:
            continue
    return False


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
