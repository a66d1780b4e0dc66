"""The slurm backend against a real one-node Slurm cluster (slurmctld + slurmd started by the ``slurm`` fixture).

Skipped, with the reason, where Slurm is not installed or the tests do not run as root; ``make test`` installs it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from launcher_helpers import (
    CARTPOLE,
    LAUNCHER,
    SWEEP_NAMES,
    launcher_env,
    processes_with,
    python_cmd,
    run_launcher,
    sweep_module,
    table_rows,
    wait_for,
    write_run_module,
)
from sf_run import shm_entries

# the test node has the machine's CPUs (2 on CI): one CPU per job lets two jobs run at a time
# long enough for a run to start and train a little on a loaded 2-core machine
TIMEOUT_S = 15
CPU_JOBS = ["--backend=slurm", "--slurm_gpus_per_job=0", "--slurm_cpus_per_gpu=1", "--pause_between=0"]


def test_sweep_of_four_runs_on_slurm(slurm, tmp_path: Path) -> None:
    train_dir = tmp_path / "td"
    before = shm_entries()
    code, output = run_launcher(
        [f"--run={sweep_module(tmp_path)}", *CPU_JOBS, "--slurm_wait=True", f"--train_dir={train_dir}"],
        env=launcher_env(SLURM_CONF=slurm.conf),
        timeout=300,
    )
    assert code == 0, output + slurm.log_tail()
    rows = table_rows(output)
    assert sorted(rows) == SWEEP_NAMES
    assert all(row[1:4] == ["done", "0", "1"] for row in rows.values()), output
    for name in SWEEP_NAMES:
        folder = train_dir / "sweep" / name
        assert (folder / "config.json").is_file() and (folder / "done").is_file(), name
        status = (train_dir / "sweep" / "slurm" / f"{name}.status").read_text()
        assert re.search(r"^final exit 0: attempt 1 \(job \d+\)", status, re.M), status
    assert slurm.queued_jobs() == []
    assert not processes_with(str(train_dir)), "experiment processes outlived their jobs"
    assert shm_entries() - before == set()


def test_job_outliving_the_timeout_is_resubmitted_and_resumes(slurm, tmp_path: Path) -> None:
    """A run longer than --slurm_timeout gets SIGTERM (saves a checkpoint), is resubmitted, and resumes from it."""
    train_dir = tmp_path / "td"
    # small batches: the learner steps within a second of starting, so even a loaded machine makes progress
    long_run = CARTPOLE + " --train_for_env_steps=1000000000 --batch_size=64 --rollout=32"
    module = write_run_module(tmp_path, "long", f'Experiment("cp", {long_run!r})')
    launcher = subprocess.Popen(
        [sys.executable, "-m", LAUNCHER, f"--run={module}", *CPU_JOBS, f"--slurm_timeout={TIMEOUT_S}",
         "--slurm_wait=True", f"--train_dir={train_dir}"],
        env=launcher_env(SLURM_CONF=slurm.conf), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    workdir = train_dir / "long" / "slurm"
    try:
        resumed = wait_for(
            lambda: re.search(r"resumed at train step ([1-9]\d*)", _read(workdir / "00_cp.log")),
            timeout=150,
            what="a resubmitted attempt resuming from a checkpoint",
        )
        status = _read(workdir / "00_cp.status")
        assert re.search(
            rf"^attempt 1 \(job \d+\) timed out after {TIMEOUT_S}s: resubmitted as job \d+$", status, re.M
        ), status
        assert "Received SIGTERM: stopping, saving checkpoints" in _read(workdir / "00_cp.log")
        assert int(resumed.group(1)) >= 1
        # the cancel helper stops the run for good: no resubmission after it
        subprocess.run([str(workdir / "cancel_long.sh")], env=launcher_env(SLURM_CONF=slurm.conf), check=True)
        output, _ = launcher.communicate(timeout=120)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
    assert launcher.returncode == 1, output
    assert table_rows(output)["00_cp"][1] == "cancelled", output
    wait_for(lambda: not slurm.queued_jobs(), timeout=60, what="an empty queue after the cancel")
    wait_for(lambda: not processes_with(str(train_dir)), timeout=60, what="the job's processes to end")


def test_failed_job_and_failed_submissions_are_reported(slurm, tmp_path: Path) -> None:
    fail = python_cmd("import sys; print('bad config', file=sys.stderr); sys.exit(3)")
    module = write_run_module(
        tmp_path, "mixed", f'Experiment("ok", {python_cmd("pass")!r}), Experiment("bad", {fail!r})'
    )
    env = launcher_env(SLURM_CONF=slurm.conf)
    code, output = run_launcher([f"--run={module}", *CPU_JOBS, "--slurm_wait=True", f"--train_dir={tmp_path}"], env)
    assert code == 1, output
    rows = table_rows(output)
    assert rows["00_ok"][1:3] == ["done", "0"] and rows["01_bad"][1:3] == ["failed", "3"], output
    assert "bad config" in _read(tmp_path / "mixed" / "slurm" / "01_bad.log")

    # sbatch refuses: the launcher passes sbatch's own message on
    code, output = run_launcher(
        [f"--run={module}", *CPU_JOBS, "--slurm_partition=nope", f"--train_dir={tmp_path}"], env
    )
    assert code == 1 and "NOT SUBMITTED: sbatch: error: invalid partition specified: nope" in output, output
    gpu_jobs = [f for f in CPU_JOBS if not f.startswith("--slurm_gpus_per_job")] + ["--slurm_gpus_per_job=1"]
    code, output = run_launcher([f"--run={module}", *gpu_jobs, f"--train_dir={tmp_path}"], env)  # a node without GPUs
    assert code == 1 and "Invalid generic resource (gres) specification" in output, output
    assert slurm.queued_jobs() == []


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def test_two_task_job_trains_one_distributed_experiment(slurm, tmp_path: Path) -> None:
    """--slurm_tasks_per_node=2: srun starts two ranks of one experiment; they meet at the job's node and finish it."""
    from test_launcher_distributed import DISTRIBUTED_CARTPOLE, assert_one_distributed_experiment

    train_dir = tmp_path / "td"
    before = shm_entries()
    module = write_run_module(tmp_path, "ddp", f'Experiment("cartpole", {DISTRIBUTED_CARTPOLE!r})')
    code, output = run_launcher(
        [f"--run={module}", *CPU_JOBS, "--slurm_tasks_per_node=2", "--slurm_wait=True", f"--train_dir={train_dir}"],
        env=launcher_env(SLURM_CONF=slurm.conf),
        timeout=300,
    )
    assert code == 0, output + slurm.log_tail()
    assert table_rows(output)["00_cartpole"][1:4] == ["done", "0", "1"], output
    log = _read(train_dir / "ddp" / "slurm" / "00_cartpole.log")
    assert "Joined a distributed run as rank 1 of 2" in log
    assert_one_distributed_experiment(train_dir / "ddp" / "00_cartpole", log)
    assert slurm.queued_jobs() == []
    assert not processes_with(str(train_dir)), "experiment processes outlived their job"
    assert shm_entries() - before == set()
