"""Churn soak: kill the children of a real parallel CartPole run over and over, and measure what is left behind.

A training run (``sf_examples.train_gym_env``, 2 rollout workers, CPU) is started in its own session. After it
collects experience, one child is SIGKILLed every ``--kill_every_s`` seconds, in rotation over the roles the runner
restarts (rollout workers, the inference worker, the learner), and each kill waits for the runner's
``<name> is back after`` line before the next. Every ``--sample_every_s`` seconds, and 2 s after each restart, the
script records the run's process count, the runner's RSS / open fds / threads / shared-memory mappings, each
child's RSS and the run's named ``/dev/shm`` entries, into a CSV. At the end the run is stopped with SIGINT, and the
script checks that no process of the run is left and that every ``/dev/shm`` entry the run made is gone.

Why these measures: a restart makes a new process, a new inbox (a faster-fifo queue in a ``pym-<pid>-*``
multiprocessing heap arena, unlinked at once, so only visible in ``/proc/<pid>/maps``), pickles the shared state
again (torch tensors shared by file descriptor: the runner holds one fd per tensor) and may create named
semaphores (``sem.mp-*``, multiprocessing locks in spawn mode). A leak of any of these shows as a count that grows
with the restarts; memory kept per restart (old process objects, inboxes, stats) shows as a runner RSS slope.

Exit code: 0 when nothing leaked and the RSS slope is under ``--rss_slope_limit_mb``, 1 when a leak is found, 2 when
the run itself failed (died, or a restart never came back). Not a timed test: run it by hand, e.g.

    python bench/soak_restarts.py --minutes=30 --restarts=22 --out=/tmp/soak --plot=docs/img/soak_restarts.png
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHM_DIR = "/dev/shm"
# the names the library's shared memory gets: multiprocessing named semaphores (spawn mode), multiprocessing heap
# arenas (faster-fifo inboxes; unlinked at once), torch's file_system sharing strategy (not the default)
LIBRARY_SHM_PREFIXES = ("sem.mp-", "pym-", "torch_")
DEFAULT_ROLES = ("rollout_w0", "rollout_w1", "inference_p0_w0", "learner_p0")
STARTED_MARKER = "collecting experience"
BACK_RE = re.compile(r"\] (\S+) is back after ([0-9.]+) s")
STOPPING_MARKER = "Stopping the run"
# a learner killed again this soon after it came back ends the run (LEARNER_REPEAT_WINDOW_S in respawn.py)
LEARNER_REPEAT_WINDOW_S = 60.0
# the run's exit code after its SIGINT: INTERRUPTED (ExperimentStatus), or SUCCESS if it had just finished
CLEAN_EXIT_CODES = (2, 0)
SETTLE_S = 2.0  # after a restart, before its snapshot: the old process object is collected, its pipes closed
# values that must be back to their baseline after every restart (a leak adds one per restart)
LEAK_KEYS = ("procs", "runner_fds", "runner_threads", "shm_entries", "runner_shm_maps")
CSV_KEYS = (
    "t_s", "event", "restarts", "killed", "procs", "runner_rss_mb", "runner_fds", "runner_threads",
    "runner_shm_maps", "runner_shm_map_mb", "shm_entries", "shm_bytes", "tree_rss_mb",
)  # fmt: skip


# ---------------------------------------------------------------- pure functions (unit-tested)
def rss_slope_mb_per_10min(times_s: list[float], rss_mb: list[float]) -> float:
    """Least-squares slope of ``rss_mb`` over ``times_s``, in MB per 10 minutes (0 with fewer than 2 points)."""
    n = len(times_s)
    if n < 2:
        return 0.0
    mean_t, mean_y = sum(times_s) / n, sum(rss_mb) / n
    var_t = sum((t - mean_t) ** 2 for t in times_s)
    if var_t == 0:
        return 0.0
    cov = sum((t - mean_t) * (y - mean_y) for t, y in zip(times_s, rss_mb, strict=True))
    return cov / var_t * 600.0


def parse_shm_maps(maps_text: str) -> dict[str, int]:
    """``{path: bytes}`` of the ``/dev/shm`` files mapped in a ``/proc/<pid>/maps`` text (deleted ones included).

    One file mapped in several ranges counts once with the sum of its ranges; "(deleted)" is kept in the name so a
    recreated file of the same name is not confused with the old one."""
    found: dict[str, int] = {}
    for line in maps_text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or not parts[5].startswith(SHM_DIR + "/"):
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        key = f"{parts[5]}@{parts[4]}"  # path and inode
        found[key] = found.get(key, 0) + end - start
    return found


def named_shm_of(maps_paths: list[str]) -> set[str]:
    """The ``/dev/shm`` entry names (not deleted) among mapped paths as ``parse_shm_maps`` keys them."""
    names = set()
    for key in maps_paths:
        path = key.rsplit("@", 1)[0]
        if not path.endswith("(deleted)"):
            names.add(os.path.basename(path.strip()))
    return names


def find_leaks(baseline: dict[str, float], after: dict[str, float], keys=LEAK_KEYS) -> dict[str, float]:
    """``{key: growth}`` for every count in ``keys`` that is higher after the restarts than before them."""
    return {k: after[k] - baseline[k] for k in keys if after[k] > baseline[k]}


def kill_schedule(duration_s: float, warmup_s: float, restarts: int, kill_every_s: float | None) -> float:
    """Seconds between kills: given, or the restarts spread over the run, leaving a minute at its end."""
    if kill_every_s is not None:
        return kill_every_s
    return max(15.0, (duration_s - warmup_s - 60.0) / max(1, restarts))


def format_table(rows: list[tuple[str, Any, Any, Any]]) -> str:
    """A plain text table: measure, before the kills, after the last restart, after the run."""
    head = ("measure", "baseline", "after restarts", "after the run")
    cells = [head, *[tuple("" if c is None else str(c) for c in row) for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_csv(path: str, samples: list[dict[str, Any]]) -> None:
    """Every sample as a CSV row; per-child RSS columns (``rss_<role>_mb``) follow the fixed ones."""
    extra = sorted({k for s in samples for k in s if k not in CSV_KEYS})
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[*CSV_KEYS, *extra], restval="")
        writer.writeheader()
        for sample in samples:
            writer.writerow(sample)


# ---------------------------------------------------------------- measuring a live run
def session_pids(pgid: int) -> list[int]:
    """Every process whose process group is ``pgid`` (the run was started in a new session)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    pids.append(int(entry))
            except (ProcessLookupError, PermissionError):
                continue
    return pids


def _read(path: str, mode: str = "r") -> Any:
    with open(path, mode) as f:
        return f.read()


def title_of(pid: int) -> str:
    """The process title (set by the runner with setproctitle), e.g. ``rollout_w1 [soak]``."""
    try:
        return _read(f"/proc/{pid}/cmdline", "rb").replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def role_pid(pgid: int, role: str) -> int | None:
    for pid in session_pids(pgid):
        if title_of(pid).startswith(role + " "):
            return pid
    return None


def shm_listing() -> dict[str, int]:
    out = {}
    try:
        with os.scandir(SHM_DIR) as it:
            for entry in it:
                try:
                    out[entry.name] = entry.stat().st_size
                except FileNotFoundError:
                    continue
    except FileNotFoundError:
        pass
    return out


@dataclass
class Probe:
    """Takes samples of one run: ``runner`` is its main process, ``pgid`` its session."""

    runner: int
    pgid: int
    started: float
    run_shm: set[str] = field(default_factory=set)  # every named /dev/shm entry a process of the run mapped

    def sample(self, event: str, restarts: int, killed: str = "") -> dict[str, Any]:
        import psutil

        row: dict[str, Any] = {"t_s": round(time.monotonic() - self.started, 1), "event": event}
        row.update(restarts=restarts, killed=killed)
        pids = session_pids(self.pgid)
        row["procs"] = len(pids)
        tree_rss = 0
        for pid in pids:
            try:
                proc = psutil.Process(pid)
                rss = proc.memory_info().rss
                maps = parse_shm_maps(_read(f"/proc/{pid}/maps"))
            except (psutil.Error, OSError):
                continue
            tree_rss += rss
            self.run_shm |= named_shm_of(list(maps))
            if pid == self.runner:
                row["runner_rss_mb"] = round(rss / 2**20, 2)
                row["runner_fds"] = proc.num_fds()
                row["runner_threads"] = proc.num_threads()
                row["runner_shm_maps"] = len(maps)
                row["runner_shm_map_mb"] = round(sum(maps.values()) / 2**20, 2)
            else:
                title = title_of(pid)
                role = "resource_tracker" if "resource_tracker" in title else title.split(" ")[0]
                row[f"rss_{role}_mb"] = round(rss / 2**20, 2)
        row["tree_rss_mb"] = round(tree_rss / 2**20, 2)
        listing = shm_listing()
        mine = {n: s for n, s in listing.items() if n in self.run_shm}
        row["shm_entries"] = len(mine)
        row["shm_bytes"] = sum(mine.values())
        return row


# ---------------------------------------------------------------- the run
def _reader(stream: IO[str], log: IO[str], events: queue.Queue) -> None:
    """Copy the run's output to its log file; hand the lines the soak waits for to the main thread."""
    for line in stream:
        log.write(line)
        log.flush()
        if STARTED_MARKER in line or BACK_RE.search(line) or STOPPING_MARKER in line:
            events.put(line)
    events.put(None)  # the run's output ended


def run_command(args: argparse.Namespace, train_dir: str) -> list[str]:
    duration = int(args.minutes * 60)
    caps = args.restarts + 5
    return [
        args.python, "-m", "sf_examples.train_gym_env", "--env=CartPole-v1", f"--num_workers={args.num_workers}",
        "--device=cpu", f"--train_dir={train_dir}", f"--experiment={args.experiment}",
        "--train_for_env_steps=10000000000", f"--train_for_seconds={duration + 600}",  # SIGINT ends it first
        f"--max_restarts={caps}", f"--max_restarts_total={caps}", f"--save_every_sec={args.save_every_sec}",
        "--decorrelate_experience_max_seconds=0", *args.extra,
    ]  # fmt: skip


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.samples: list[dict[str, Any]] = []
        self.restarts = 0
        self.back_times: list[tuple[str, float]] = []
        self.problems: list[str] = []  # the run failed: not a leak, but the soak is void
        self.events: queue.Queue = queue.Queue()
        self.output_ended = False
        self.probe: Probe | None = None
        self.last_sample_at = 0.0

    def _wait_line(self, accept, timeout: float) -> str | None:
        """The next line of interest that ``accept`` takes, or None after ``timeout`` s or when the run ended."""
        deadline = time.monotonic() + timeout
        while not self.output_ended:
            try:
                line = self.events.get(timeout=max(0.01, min(1.0, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    return None
                continue
            if line is None:
                self.output_ended = True
                return None
            if STOPPING_MARKER in line:
                self.problems.append(f"the run stopped itself: {line.strip()}")
                return None
            if accept(line):
                return line
        return None

    def _sample(self, probe: Probe, event: str, killed: str = "") -> dict[str, Any]:
        row = probe.sample(event, self.restarts, killed)
        self.samples.append(row)
        return row

    def _sleep_sampling(self, probe: Probe, until: float) -> None:
        """Take periodic samples until monotonic time ``until`` (or the run ends)."""
        while time.monotonic() < until and self.proc.poll() is None:
            next_sample = self.last_sample_at + self.args.sample_every_s
            time.sleep(max(0.0, min(until, next_sample) - time.monotonic()))
            if time.monotonic() >= next_sample:
                self._sample(probe, "sample")
                self.last_sample_at = time.monotonic()

    def _kill_one(self, probe: Probe, role: str) -> bool:
        """SIGKILL ``role`` and wait for its ``is back`` line; False when the run failed instead."""
        pid = role_pid(probe.pgid, role)
        if pid is None:
            self.problems.append(f"no process titled {role} in the run")
            return False
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        line = self._wait_line(
            lambda s: (m := BACK_RE.search(s)) is not None and m.group(1) == role, self.args.restart_timeout_s
        )
        if line is None:
            self.problems.append(f"{role} did not come back (killed at {killed_at - probe.started:.0f} s)")
            return False
        self.restarts += 1
        self.back_times.append((role, time.monotonic() - killed_at))
        time.sleep(SETTLE_S)
        self._sample(probe, "after_restart", role)
        return True

    def run(self) -> int:
        args = self.args
        own_dir = not args.train_dir
        train_dir = args.train_dir or tempfile.mkdtemp(prefix="soak_restarts_")
        os.makedirs(args.out, exist_ok=True)
        shm_before = shm_listing()
        lib_before = sum(1 for n in shm_before if n.startswith(LIBRARY_SHM_PREFIXES))
        cmd = run_command(args, train_dir)
        self.command = " ".join(cmd)
        log_path = os.path.join(args.out, "run.log")
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        }
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                start_new_session=True, env=env,
            )  # fmt: skip
            reader = threading.Thread(target=_reader, args=(self.proc.stdout, log, self.events), daemon=True)
            reader.start()
            try:
                self._soak(args)
            finally:
                exit_code, leftovers = self._stop()
                reader.join(timeout=10)
        if own_dir:  # a temporary folder this script made, never one the user named
            shutil.rmtree(train_dir, ignore_errors=True)
        shm_after = shm_listing()
        lib_after = sum(1 for n in shm_after if n.startswith(LIBRARY_SHM_PREFIXES))
        run_shm_left = sorted(n for n in self.probe.run_shm if n in shm_after) if self.probe else []
        return self._report(exit_code, leftovers, run_shm_left, lib_before, lib_after, log_path)

    def _soak(self, args: argparse.Namespace) -> None:
        if self._wait_line(lambda s: STARTED_MARKER in s, 600.0) is None:
            self.problems.append("the run never started collecting experience")
            return
        started = time.monotonic()
        self.probe = probe = Probe(self.proc.pid, self.proc.pid, started)
        duration = args.minutes * 60.0
        every = kill_schedule(duration, args.warmup_s, args.restarts, args.kill_every_s)
        self.last_sample_at = started
        self._sample(probe, "baseline")
        roles = args.roles.split(",")
        learner_back = -LEARNER_REPEAT_WINDOW_S
        next_kill = started + args.warmup_s
        while time.monotonic() < started + duration and self.proc.poll() is None and not self.problems:
            if self.restarts < args.restarts and time.monotonic() + 30.0 < started + duration:
                role = roles[self.restarts % len(roles)]
                if role.startswith("learner"):  # a learner dying again within the window would end the run
                    next_kill = max(next_kill, learner_back + LEARNER_REPEAT_WINDOW_S + 5.0)
                self._sleep_sampling(probe, next_kill)
                if time.monotonic() + 30.0 >= started + duration or self.proc.poll() is not None:
                    continue
                if not self._kill_one(probe, role):
                    break
                if role.startswith("learner"):
                    learner_back = time.monotonic()
                next_kill = max(time.monotonic(), next_kill + every)
            else:
                self._sleep_sampling(probe, started + duration)
        if self.proc.poll() is not None and not self.problems:
            self.problems.append(f"the run ended on its own with exit code {self.proc.returncode}")
        self._sample(probe, "end")

    def _stop(self) -> tuple[int | None, list[str]]:
        """SIGINT the runner (it saves and stops everything); then list what of its session is still alive."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            exit_code = self.proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            exit_code = None
        deadline = time.monotonic() + 15.0  # children exit a moment after the runner (resource tracker)
        while session_pids(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        leftovers = [f"{pid} {title_of(pid)}" for pid in session_pids(self.proc.pid)]
        if leftovers:  # never leave them running for the next job; the resource tracker last, so that it can
            # unlink the semaphores of the processes killed before it
            self._kill_session(lambda pid: "resource_tracker" not in title_of(pid))
            deadline = time.monotonic() + 10.0
            while session_pids(self.proc.pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            self._kill_session(lambda pid: True)
        return exit_code, leftovers

    def _kill_session(self, which) -> None:
        for pid in session_pids(self.proc.pid):
            if which(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _report(self, exit_code, leftovers, run_shm_left, lib_before, lib_after, log_path) -> int:
        args, samples = self.args, self.samples
        csv_path = os.path.join(args.out, "soak_restarts.csv")
        write_csv(csv_path, samples)
        baseline = next((s for s in samples if s["event"] == "baseline"), None)
        restarted = [s for s in samples if s["event"] == "after_restart"]
        leaks: dict[str, float] = {}
        if baseline and restarted and all(k in restarted[-1] for k in LEAK_KEYS):
            leaks = find_leaks(baseline, restarted[-1])
        deltas = [
            {"restart": s["restarts"], "killed": s["killed"], **{k: s[k] - baseline[k] for k in LEAK_KEYS if k in s}}
            for s in restarted
            if baseline
        ]
        worst = {k: max((d.get(k, 0) for d in deltas), default=0) for k in LEAK_KEYS}
        warm = [s for s in samples if s["t_s"] >= args.warmup_s and "runner_rss_mb" in s]
        slope = rss_slope_mb_per_10min([s["t_s"] for s in warm], [s["runner_rss_mb"] for s in warm])
        last = restarted[-1] if restarted else {}
        rows = [(k, baseline.get(k) if baseline else None, last.get(k), None) for k in (*LEAK_KEYS, "shm_bytes")]
        rows[0] = ("procs", rows[0][1], rows[0][2], len(leftovers))
        rows[3] = ("shm_entries", rows[3][1], rows[3][2], len(run_shm_left))
        end = samples[-1] if samples else {}
        rows.append(
            ("runner_rss_mb", baseline.get("runner_rss_mb") if baseline else None, end.get("runner_rss_mb"), None)
        )
        rows.append((f"library /dev/shm entries ({', '.join(LIBRARY_SHM_PREFIXES)}*)", lib_before, None, lib_after))
        per_role: dict[str, int] = {}
        for role, _ in self.back_times:
            per_role[role] = per_role.get(role, 0) + 1
        backs = sorted(t for _, t in self.back_times)
        summary = {
            "command": self.command,
            "minutes": args.minutes,
            "restarts": self.restarts,
            "restarts_per_role": per_role,
            "restart_seconds_median": round(backs[len(backs) // 2], 1) if backs else None,
            "restart_seconds_max": round(backs[-1], 1) if backs else None,
            "run_exit_code": exit_code,
            "leaks_after_restarts": leaks,
            "largest_delta_after_any_restart": worst,
            "deltas_after_each_restart": deltas,
            "processes_left": leftovers,
            "run_shm_entries_left": run_shm_left,
            "run_shm_names_seen": sorted(self.probe.run_shm) if self.probe else [],
            "runner_rss_slope_mb_per_10min": round(slope, 3),
            "rss_fit_from_s": args.warmup_s,
            "rss_samples_in_fit": len(warm),
            "problems": self.problems,
            "csv": csv_path,
            "log": log_path,
        }
        failed_slope = abs(slope) > args.rss_slope_limit_mb
        code = 0
        if leaks or leftovers or run_shm_left or failed_slope or self.restarts < args.restarts:
            code = 1
        if self.problems or exit_code not in CLEAN_EXIT_CODES:
            code = 2
        summary["exit_code"] = code
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)
        table = format_table(rows)
        text = (
            f"{table}\n\nrestarts: {self.restarts} {per_role}; back after median {summary['restart_seconds_median']}"
            f" s, max {summary['restart_seconds_max']} s\n"
            f"runner RSS slope after {args.warmup_s:.0f} s: {slope:+.2f} MB per 10 min (limit "
            f"{args.rss_slope_limit_mb}) over {len(warm)} samples\nrun exit code: {exit_code}\n"
            f"largest rise over the baseline after any restart: {worst}\n"
            f"leaks: {leaks or 'none'}; processes left: {leftovers or 'none'}; "
            f"run /dev/shm left: {run_shm_left or 'none'}\n"
            f"problems: {self.problems or 'none'}\nsoak exit code: {code}\n"
        )
        with open(os.path.join(args.out, "summary.txt"), "w") as f:
            f.write(text)
        print(text)
        if args.plot:
            plot(samples, args.plot)
        return code


def plot(samples: list[dict[str, Any]], path: str) -> bool:
    """RSS, fds, threads and /dev/shm mappings of the runner against time, restarts marked; False without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return False
    rows = [s for s in samples if "runner_rss_mb" in s]
    t = [s["t_s"] / 60 for s in rows]
    panels = [
        ("runner RSS (MB)", "runner_rss_mb"), ("runner open fds", "runner_fds"),
        ("runner threads", "runner_threads"), ("processes of the run", "procs"),
        ("runner /dev/shm mappings", "runner_shm_maps"), ("run's named /dev/shm entries", "shm_entries"),
    ]  # fmt: skip
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 11), sharex=True)
    kills = [s["t_s"] / 60 for s in rows if s["event"] == "after_restart"]
    for ax, (label, key) in zip(axes, panels, strict=True):
        ax.plot(t, [s[key] for s in rows], lw=1.2)
        for k in kills:
            ax.axvline(k, color="tab:red", lw=0.5, alpha=0.5)
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_title(f"Churn soak: {len(kills)} restarts (red lines), CartPole, 2 rollout workers", fontsize=10)
    axes[-1].set_xlabel("minutes since the run began collecting experience")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float, default=30.0, help="how long the run collects experience")
    p.add_argument("--restarts", type=int, default=22, help="kills to make (each waits for its restart)")
    p.add_argument("--kill_every_s", type=float, default=None, help="default: the restarts spread over the run")
    p.add_argument("--sample_every_s", type=float, default=10.0)
    p.add_argument("--restart_timeout_s", type=float, default=300.0, help="a restart not back by then fails the soak")
    p.add_argument("--warmup_s", type=float, default=None, help="before the first kill and the RSS fit (default: "
                   "a sixth of the run, at least 20 s)")  # fmt: skip
    p.add_argument("--roles", default=",".join(DEFAULT_ROLES), help="killed in rotation (process title prefixes)")
    p.add_argument("--rss_slope_limit_mb", type=float, default=5.0, help="max runner RSS growth, MB per 10 min")
    p.add_argument("--out", default="/tmp/soak_restarts", help="folder for soak_restarts.csv, summary.*, run.log")
    p.add_argument(
        "--plot", default="", help="PNG path of the plot (needs matplotlib), e.g. docs/img/soak_restarts.png"
    )
    p.add_argument("--train_dir", default="", help="default: a new temporary folder")
    p.add_argument("--experiment", default="soak")
    p.add_argument("--num_workers", type=int, default=2)
    p.add_argument("--save_every_sec", type=int, default=30, help="so a restarted learner resumes from a checkpoint")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("extra", nargs="*", help="more flags for the training run, after --")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.restarts < 0 or args.sample_every_s <= 0:
        p.error("--minutes and --sample_every_s must be positive, --restarts >= 0")
    if args.warmup_s is None:
        args.warmup_s = max(20.0, args.minutes * 10.0)
    if args.kill_every_s is not None and args.kill_every_s <= 0:
        p.error("--kill_every_s must be positive")
    return args


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # unwinds through Soak.run, which stops the training run


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)  # a killed soak must not leave its training run behind
    return Soak(args).run()


if __name__ == "__main__":
    sys.exit(main())
