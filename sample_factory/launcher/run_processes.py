"""processes backend: run a sweep's experiments as local child processes, a few at a time.

Each experiment runs in its own session (its own process group), so one signal reaches the experiment and every
worker it spawned, and a terminal's Ctrl+C reaches only the launcher: the launcher then decides how to stop. It
sends SIGTERM to every running group (Sample Factory saves checkpoints and exits), waits up to
``STOP_GRACE_S``, kills what is left, and returns only when no process of any group remains. GPUs are handed out
round-robin through ``CUDA_VISIBLE_DEVICES``; output goes to one stdout and one stderr file per experiment under
``<run dir>/launcher_logs/`` (appended, never truncated, so a relaunch keeps the earlier attempt's output).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass, field

import psutil

from sample_factory.launcher.distributed_commands import torchrun_argv
from sample_factory.launcher.launcher_utils import (
    LauncherError,
    StatusLine,
    format_duration,
    format_table,
    launcher_flags,
)
from sample_factory.launcher.run_description import ExperimentCommand, RunDescription

STOP_GRACE_S = 30.0  # time to save checkpoints after SIGTERM before the group is killed
LEFTOVER_GRACE_S = 10.0  # workers exit a moment after their main process; longer means they were left behind
POLL_PERIOD_S = 0.2
NO_SLOT = -1
FAILED_LOG_TAIL_LINES = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of this backend, as their own --help section."""
    launcher_flags().add_group(parser, "processes")


def add_os_parallelism_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Sample Factory 2's name for :func:`add_arguments` (the local-processes flags); returns ``parser``."""
    add_arguments(parser)
    return parser


@dataclass
class LocalExperiment:
    """One experiment's state in the local pool."""

    command: ExperimentCommand
    stdout_path: str
    stderr_path: str
    status: str = "queued"  # queued -> running -> done | failed | stopped
    gpus: list[int] = field(default_factory=list)  # the GPUs it runs on, one per rank; empty: CPU only
    process: subprocess.Popen | None = None
    started: float | None = None
    finished: float | None = None
    returncode: int | None = None

    def logs(self) -> str:
        """Both log files in shell brace form (``tail name.{out,err}`` opens both)."""
        return f"{self.stdout_path.removesuffix('.out')}.{{out,err}}"

    def elapsed(self, now: float) -> float:
        if self.started is None:
            return 0.0
        return (self.finished or now) - self.started


@dataclass
class PoolOptions:
    max_parallel: int
    num_gpus: int
    experiments_per_gpu: int
    pause_between: float
    ranks_per_experiment: int = 1


def _check_options(args: argparse.Namespace) -> PoolOptions:
    if args.max_parallel < 1:
        raise LauncherError(f"--max_parallel={args.max_parallel} must be at least 1")
    if args.num_gpus < 0:
        raise LauncherError(f"--num_gpus={args.num_gpus} must be 0 (CPU only) or more")
    if args.experiments_per_gpu == 0 or args.experiments_per_gpu < -1:
        raise LauncherError(f"--experiments_per_gpu={args.experiments_per_gpu} must be -1 (no limit) or at least 1")
    if args.pause_between < 0:
        raise LauncherError(f"--pause_between={args.pause_between} must not be negative")
    if args.ranks_per_experiment < 1:
        raise LauncherError(f"--ranks_per_experiment={args.ranks_per_experiment} must be at least 1")
    return PoolOptions(
        args.max_parallel, args.num_gpus, args.experiments_per_gpu, args.pause_between, args.ranks_per_experiment
    )


class LocalPool:
    """Starts queued experiments while slots (and GPUs) are free; reaps them; stops them all on request."""

    def __init__(self, experiments: list[LocalExperiment], options: PoolOptions, status: StatusLine) -> None:
        self.experiments = experiments
        self.options = options
        self.status = status
        self.stop_requests = 0
        self.next_gpu = 0
        self.next_launch = 0.0

    def request_stop(self, signum: int, _frame) -> None:
        self.stop_requests += 1

    def _counts(self) -> dict[str, int]:
        counts = {s: sum(e.status == s for e in self.experiments) for s in ("running", "done", "failed", "queued")}
        stopped = sum(e.status == "stopped" for e in self.experiments)
        return counts | ({"stopped": stopped} if stopped else {})

    def running(self) -> list[LocalExperiment]:
        return [e for e in self.experiments if e.status == "running"]

    def run(self) -> None:
        start = time.monotonic()
        while self.stop_requests == 0 and any(e.status in ("queued", "running") for e in self.experiments):
            self._reap()
            self._launch_next()
            self.status.update(self._counts(), time.monotonic() - start)
            time.sleep(POLL_PERIOD_S)
        if self.stop_requests:
            self.stop_all()
        self.status.update(self._counts(), time.monotonic() - start)
        self.status.close()

    def _launch_next(self) -> None:
        queued = [e for e in self.experiments if e.status == "queued"]
        now = time.monotonic()
        if not queued or len(self.running()) >= self.options.max_parallel or now < self.next_launch:
            return
        gpu = self._pick_gpu()
        if gpu == NO_SLOT:
            return
        self._launch(queued[0], gpu)
        self.next_launch = time.monotonic() + self.options.pause_between

    def _pick_gpu(self) -> int | None:
        """The first GPU of the next experiment (``_gpus_of``): the one whose GPUs' busiest is least loaded, ties
        broken round-robin; None for CPU-only; NO_SLOT when that GPU is full. Every running experiment counts on
        each GPU it uses, so a multi-rank experiment fills ``--experiments_per_gpu`` on all of them."""
        num_gpus = self.options.num_gpus
        if num_gpus == 0:
            return None
        load = dict.fromkeys(range(num_gpus), 0)
        for e in self.running():
            for g in e.gpus:
                load[g] += 1

        def busiest(first: int) -> int:
            return max(load[g] for g in self._gpus_of(first))

        gpu = min(load, key=lambda g: (busiest(g), (g - self.next_gpu) % num_gpus))
        if 0 < self.options.experiments_per_gpu <= busiest(gpu):
            return NO_SLOT
        self.next_gpu = (gpu + len(self._gpus_of(gpu))) % num_gpus
        return gpu

    def _launch(self, experiment: LocalExperiment, gpu: int | None) -> None:
        env = dict(os.environ)
        env.update(experiment.command.env_vars or {})
        gpus = [] if gpu is None else self._gpus_of(gpu)
        env["CUDA_VISIBLE_DEVICES"] = _listed(gpus)
        argv, cmd = experiment.command.argv(), experiment.command.cmd
        if self.options.ranks_per_experiment > 1:
            argv = torchrun_argv(argv, self.options.ranks_per_experiment)
            cmd = shlex.join(argv)
        os.makedirs(os.path.dirname(experiment.stdout_path), exist_ok=True)
        with open(experiment.stdout_path, "a") as out, open(experiment.stderr_path, "a") as err:
            out.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} launcher: {cmd}\n")
            out.flush()
            try:
                experiment.process = subprocess.Popen(argv, stdout=out, stderr=err, env=env, start_new_session=True)
            except OSError as e:  # a command that is not on PATH, not executable, ...
                err.write(f"launcher: could not start {cmd!r}: {e}\n")
                experiment.status, experiment.returncode = "failed", None
                self.status.print(f"[launcher] FAILED to start {experiment.command.name}: {e}")
                return
        experiment.gpus, experiment.status, experiment.started = gpus, "running", time.monotonic()
        where = "CPU" if not gpus else f"GPU {_listed(gpus)}"
        self.status.print(
            f"[launcher] started {experiment.command.name} (pid {experiment.process.pid}, {where}), "
            f"logs {experiment.logs()}"
        )

    def _gpus_of(self, first: int) -> list[int]:
        """The GPUs of an experiment started on ``first``: it and, for its other ranks, the next ones (round-robin)."""
        count = min(self.options.ranks_per_experiment, self.options.num_gpus)
        return [(first + i) % self.options.num_gpus for i in range(count)]

    def _reap(self) -> None:
        for e in self.running():
            returncode = e.process.poll()
            if returncode is None:
                continue
            e.returncode, e.finished = returncode, time.monotonic()
            e.status = "done" if returncode == 0 else "failed"
            if not _wait_group_gone(e.process.pid, deadline=time.monotonic() + LEFTOVER_GRACE_S):
                self.status.print(f"[launcher] {e.command.name} exited but left processes behind: killing them")
                _signal_group(e.process.pid, signal.SIGKILL)
                _wait_group_gone(e.process.pid, deadline=time.monotonic() + LEFTOVER_GRACE_S)
            detail = "" if returncode == 0 else f" (exit code {returncode}, see {e.stderr_path})"
            self.status.print(
                f"[launcher] {e.status} {e.command.name} in {format_duration(e.elapsed(e.finished))}{detail}"
            )

    def stop_all(self) -> None:
        """SIGTERM every running group, SIGKILL what outlives the grace period, return when all groups are empty."""
        running = self.running()
        self.status.print(f"[launcher] interrupted: stopping {len(running)} running experiment(s)")
        for e in running:
            _signal_group(e.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for e in running:
            while e.process.poll() is None and time.monotonic() < deadline and self.stop_requests < 2:
                time.sleep(POLL_PERIOD_S)
            if not _wait_group_gone(e.process.pid, deadline=deadline if self.stop_requests < 2 else 0):
                _signal_group(e.process.pid, signal.SIGKILL)
                _wait_group_gone(e.process.pid, deadline=time.monotonic() + LEFTOVER_GRACE_S)
            e.process.wait()
            e.returncode, e.finished, e.status = e.process.returncode, time.monotonic(), "stopped"


def _group_members(pgid: int) -> list[psutil.Process]:
    """Live (non-zombie) processes of a process group: zombies are not running, just not yet reaped."""
    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _wait_group_gone(pgid: int, deadline: float) -> bool:
    """Wait until no live process is left in the group (workers exit a moment after the main process)."""
    while True:
        members = [p for p in _group_members(pgid) if p.pid != os.getpid()]
        if not members:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_PERIOD_S)


def _log_tail(path: str, lines: int) -> list[str]:
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-lines:]
    except OSError:
        return []


def _listed(gpus: list[int]) -> str:
    return ",".join(str(g) for g in gpus)


def final_report(experiments: list[LocalExperiment], now: float) -> str:
    header = ["experiment", "status", "exit", "elapsed", "gpu", "logs"]
    rows = [
        [
            e.command.name,
            e.status,
            "-" if e.returncode is None else str(e.returncode),
            format_duration(e.elapsed(now)),
            _listed(e.gpus) if e.gpus else "-",
            e.logs(),
        ]
        for e in experiments
    ]
    parts = [format_table(header, rows)]
    for e in experiments:
        if e.status == "failed":
            tail = "\n".join(f"    {line}" for line in _log_tail(e.stderr_path, FAILED_LOG_TAIL_LINES))
            parts.append(f"{e.command.name} failed; last lines of {e.stderr_path}:\n{tail}")
    return "\n".join(parts)


def make_experiments(description: RunDescription, train_dir: str) -> list[LocalExperiment]:
    experiments = []
    logs = os.path.join(description.run_dir(train_dir), "launcher_logs")
    for command in description.generate_experiments(train_dir):
        base = os.path.join(logs, command.name)
        experiments.append(LocalExperiment(command, f"{base}.out", f"{base}.err"))
    return experiments


def run(run_description: RunDescription, args: argparse.Namespace) -> int:
    """Run every experiment; 0 when all succeeded, 1 when any failed, 130 when interrupted (Ctrl+C or SIGTERM)."""
    options = _check_options(args)
    experiments = make_experiments(run_description, args.train_dir)
    if options.ranks_per_experiment > 1:  # refuse a command torchrun cannot run before anything starts
        for experiment in experiments:
            torchrun_argv(experiment.command.argv(), options.ranks_per_experiment)
    print(
        f"[launcher] run {run_description.run_name}: {len(experiments)} experiment(s), "
        f"at most {options.max_parallel} at a time, in {run_description.run_dir(args.train_dir)}"
    )
    pool = LocalPool(experiments, options, StatusLine())
    previous = {sig: signal.signal(sig, pool.request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        pool.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(final_report(experiments, time.monotonic()))
    if pool.stop_requests:
        stopped = [e.command.name for e in experiments if e.status == "stopped"]
        not_started = sum(e.status == "queued" for e in experiments)
        print(f"[launcher] interrupted: stopped {', '.join(stopped) or 'nothing'}; {not_started} never started")
        return 130
    failed = [e.command.name for e in experiments if e.status == "failed"]
    if failed:
        print(f"[launcher] {len(failed)} of {len(experiments)} experiment(s) failed: {', '.join(failed)}")
        return 1
    print(f"[launcher] all {len(experiments)} experiment(s) finished")
    return 0
