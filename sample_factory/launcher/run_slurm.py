"""slurm backend: one sbatch job per experiment, resubmitted after a time-out, optionally waited for.

The launcher writes every job script, a ``cancel_<run>.sh`` script and per-experiment logs into
``--slurm_workdir`` (a folder the compute nodes see), submits each script with ``sbatch --parsable`` and reports
submission failures with sbatch's own message. It then returns, unless ``--slurm_wait=True``: then it follows the
jobs (through their resubmissions) with ``squeue`` and the status files the scripts write, and prints the same
kind of final table as the processes backend. Job scripts run with the environment of the submitting shell
(sbatch's default), so the client commands and Python found at submission are found inside the jobs too.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from sample_factory.launcher import slurm_wait
from sample_factory.launcher.launcher_utils import LauncherError, format_table, launcher_flags, read_template
from sample_factory.launcher.run_description import ExperimentCommand, RunDescription
from sample_factory.launcher.slurm_script import (
    DEFAULT_SBATCH_TEMPLATE,
    SlurmJobFiles,
    SlurmOptions,
    cancel_script,
    job_name,
    job_script,
    parse_timeout,
    sbatch_options,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of this backend, as their own --help section."""
    launcher_flags().add_group(parser, "slurm")


def add_slurm_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Sample Factory 2's name for :func:`add_arguments`; returns ``parser`` for chaining."""
    add_arguments(parser)
    return parser


@dataclass
class SlurmExperiment:
    """One experiment on Slurm: its files, its sbatch command and what happened to it."""

    command: ExperimentCommand
    name: str  # the Slurm job name
    files: SlurmJobFiles
    sbatch: list[str]
    job_id: str | None = None
    submit_error: str | None = None


def _options(args: argparse.Namespace) -> SlurmOptions:
    if args.slurm_gpus_per_job < 0:
        raise LauncherError(f"--slurm_gpus_per_job={args.slurm_gpus_per_job} must be 0 (CPU-only) or more")
    if args.slurm_cpus_per_gpu < 1:
        raise LauncherError(f"--slurm_cpus_per_gpu={args.slurm_cpus_per_gpu} must be at least 1")
    if args.slurm_max_resubmits < 0:
        raise LauncherError(f"--slurm_max_resubmits={args.slurm_max_resubmits} must not be negative")
    for flag in ("slurm_nodes_per_job", "slurm_tasks_per_node"):
        if getattr(args, flag) < 1:
            raise LauncherError(f"--{flag}={getattr(args, flag)} must be at least 1")
    return SlurmOptions(
        partition=args.slurm_partition,
        gpus_per_job=args.slurm_gpus_per_job,
        cpus_per_gpu=args.slurm_cpus_per_gpu,
        timeout_s=parse_timeout(args.slurm_timeout),
        max_resubmits=args.slurm_max_resubmits,
        nodes=args.slurm_nodes_per_job,
        tasks_per_node=args.slurm_tasks_per_node,
    )


def prepare_jobs(description: RunDescription, args: argparse.Namespace) -> tuple[list[SlurmExperiment], str]:
    """Write every job script and the cancel script; return the experiments and the script's path."""
    options = _options(args)
    template = read_template(args.slurm_sbatch_template, DEFAULT_SBATCH_TEMPLATE, "--slurm_sbatch_template")
    workdir = os.path.abspath(args.slurm_workdir or os.path.join(description.run_dir(args.train_dir), "slurm"))
    os.makedirs(workdir, exist_ok=True)
    experiments = []
    for command in description.generate_experiments(args.train_dir):
        name = job_name(description.run_name, command.name)
        files = SlurmJobFiles.in_workdir(workdir, command.name)
        flags = sbatch_options(name, files, options, chdir=os.getcwd())
        _write_executable(files.script, job_script(command, files, flags, options, template))
        experiments.append(SlurmExperiment(command, name, files, ["sbatch", "--parsable", *flags, files.script, "1"]))
    helper = os.path.join(workdir, f"cancel_{description.run_name}.sh")
    _write_executable(
        helper, cancel_script(description.run_name, [e.name for e in experiments], [e.files for e in experiments])
    )
    return experiments, helper


def _write_executable(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def submit(experiment: SlurmExperiment) -> None:
    """sbatch one job; a failure keeps sbatch's own message for the report."""
    try:
        os.remove(experiment.files.cancelled)  # a relaunch after a cancel must be able to resubmit again
    except FileNotFoundError:
        pass
    try:
        result = subprocess.run(experiment.sbatch, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        experiment.submit_error = "sbatch not found on PATH (is this a Slurm login node?)"
        return
    except subprocess.TimeoutExpired:
        experiment.submit_error = "sbatch did not answer within 120 s"
        return
    if result.returncode != 0:
        experiment.submit_error = (
            result.stderr.strip() or result.stdout.strip()
        ) + f" (sbatch exit {result.returncode})"
        return
    experiment.job_id = result.stdout.strip().split(";")[0]
    with open(experiment.files.status, "a") as f:
        f.write(f"=== submitted job {experiment.job_id} at {time.strftime('%Y-%m-%d %H:%M:%S')}\n")


def _print_submissions(experiments: list[SlurmExperiment]) -> None:
    rows = [
        [e.command.name, e.job_id or "-", "submitted" if e.job_id else f"NOT SUBMITTED: {e.submit_error}"]
        for e in experiments
    ]
    print(format_table(["experiment", "job", "submission"], rows))


def run(run_description: RunDescription, args: argparse.Namespace) -> int:
    """Submit every experiment (or print the commands); 0 on success, 1 when any submission or job failed."""
    experiments, helper = prepare_jobs(run_description, args)
    if args.slurm_print_only:
        for e in experiments:
            print(shlex.join(e.sbatch))
        print(f"[launcher] --slurm_print_only: {len(experiments)} job script(s) written, nothing submitted")
        return 0
    for i, experiment in enumerate(experiments):
        if i > 0 and args.pause_between > 0:
            time.sleep(args.pause_between)  # spreads the requests to the controller
        submit(experiment)
        print(
            f"[launcher] {experiment.command.name}: "
            + (f"job {experiment.job_id}" if experiment.job_id else f"submission failed: {experiment.submit_error}")
        )
    _print_submissions(experiments)
    failed = [e for e in experiments if e.job_id is None]
    print(f"[launcher] {len(experiments) - len(failed)} job(s) submitted; cancel them all with: {helper}")
    if failed:
        print(f"[launcher] {len(failed)} submission(s) failed: see the messages above", file=sys.stderr)
    if not args.slurm_wait:
        return 1 if failed else 0
    return _wait(experiments, helper, any_failed=bool(failed))


def _wait(experiments: list[SlurmExperiment], helper: str, any_failed: bool) -> int:
    tracked = [slurm_wait.TrackedJob(e.command.name, e.name, e.files, e.job_id) for e in experiments if e.job_id]
    stop = {"requested": False}

    def request_stop(signum: int, _frame) -> None:
        stop["requested"] = True

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        slurm_wait.wait_for_jobs(tracked, should_stop=lambda: stop["requested"])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(slurm_wait.final_table(tracked))
    if stop["requested"]:
        print(f"[launcher] stopped waiting; the jobs keep running on Slurm. Cancel them with: {helper}")
        return 130
    failed = [t.experiment for t in tracked if t.status != "done"]
    if failed:
        print(f"[launcher] {len(failed)} experiment(s) did not finish successfully: {', '.join(failed)}")
    return 1 if failed or any_failed else 0


def run_slurm(run_description: RunDescription, args: argparse.Namespace) -> int:
    """Sample Factory 2's name for :func:`run`: the exit code of the whole run."""
    return run(run_description, args)
