"""One experiment as several ranks through the launcher: torchrun under the processes backend, srun in Slurm jobs.

The command rewriting and the job scripts are checked as text; the processes backend also runs a two-rank CartPole
experiment to the end (the Slurm run is in ``test_launcher_slurm.py``, next to the cluster it needs).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from launcher_helpers import CARTPOLE, processes_with, run_launcher, table_rows, write_run_module
from sf_run import shm_entries
from tb_events import read_scalars

from sample_factory.launcher.distributed_commands import torchrun_argv
from sample_factory.launcher.launcher_utils import LauncherError
from sample_factory.launcher.run_processes import NO_SLOT, LocalPool, PoolOptions

TORCHRUN = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
DIGEST_RE = re.compile(r"Policy 0 weights digest: ([0-9a-f]+) \(rank (\d) of 2")
# a two-rank experiment of a few thousand env steps (all ranks together)
DISTRIBUTED_CARTPOLE = CARTPOLE + " --train_for_env_steps=8192"


def test_a_python_command_is_rewritten_to_run_under_torchrun() -> None:
    module_cmd = ["python3", "-m", "sf_examples.train_gym_env", "--env=CartPole-v1"]
    assert torchrun_argv(module_cmd, 2) == [
        "python3",
        *TORCHRUN,
        "-m",
        "sf_examples.train_gym_env",
        "--env=CartPole-v1",
    ]
    script_cmd = [sys.executable, "-u", "train.py", "--seed=1"]
    assert torchrun_argv(script_cmd, 2) == [sys.executable, "-u", *TORCHRUN, "train.py", "--seed=1"]


@pytest.mark.parametrize("argv", [["bash", "run.sh"], ["python"], []])
def test_a_command_torchrun_cannot_run_is_refused(argv: list[str]) -> None:
    with pytest.raises(LauncherError, match="torchrun"):
        torchrun_argv(argv, 2)


def _one_experiment(tmp_path: Path, command: str) -> Path:
    return write_run_module(tmp_path, "ddp", f'Experiment("cartpole", {command!r})')


def test_slurm_job_of_a_distributed_experiment_runs_one_rank_per_task(tmp_path: Path) -> None:
    module = _one_experiment(tmp_path, DISTRIBUTED_CARTPOLE + " --restart_behavior=restart")
    workdir = tmp_path / "work"
    code, output = run_launcher(
        [f"--run={module}", "--backend=slurm", "--slurm_print_only=True", f"--train_dir={tmp_path / 'td'}",
         f"--slurm_workdir={workdir}", "--slurm_nodes_per_job=2", "--slurm_tasks_per_node=4", "--slurm_timeout=1h"]
    )  # fmt: skip
    assert code == 0, output
    sbatch = shlex.split(next(line for line in output.splitlines() if line.startswith("sbatch ")))
    assert "--nodes=2" in sbatch and "--ntasks-per-node=4" in sbatch
    script = (workdir / "00_cartpole.sh").read_text()
    assert 'export WORLD_SIZE="$SLURM_NTASKS"' in script and "scontrol show hostnames" in script
    srun = "timeout --signal=TERM --kill-after=120 3600 srun --kill-on-bad-exit=1 bash -c"
    assert script.count(srun) == 2  # the first attempt, and a resubmitted one that adds --restart_behavior=resume
    subprocess.run(["bash", "-n", str(workdir / "00_cartpole.sh")], check=True)


def test_slurm_job_of_one_task_has_no_srun(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    code, output = run_launcher(
        [f"--run={_one_experiment(tmp_path, CARTPOLE)}", "--backend=slurm", "--slurm_print_only=True",
         f"--slurm_workdir={workdir}", f"--train_dir={tmp_path / 'td'}"]
    )  # fmt: skip
    assert code == 0, output
    assert "srun" not in (workdir / "00_cartpole.sh").read_text() and "--ntasks-per-node" not in output


def test_bad_rank_counts_are_refused(tmp_path: Path) -> None:
    module = _one_experiment(tmp_path, CARTPOLE)
    code, output = run_launcher([f"--run={module}", "--backend=slurm", "--slurm_tasks_per_node=0"])
    assert code == 2 and "--slurm_tasks_per_node=0 must be at least 1" in output
    code, output = run_launcher([f"--run={module}", "--ranks_per_experiment=0", f"--train_dir={tmp_path}"])
    assert code == 2 and "--ranks_per_experiment=0 must be at least 1" in output
    bash_module = write_run_module(tmp_path, "sh", 'Experiment("sh", "bash -c true")')
    code, output = run_launcher([f"--run={bash_module}", "--ranks_per_experiment=2", f"--train_dir={tmp_path}"])
    assert code == 2 and "must start with a Python interpreter" in output, output


def assert_one_distributed_experiment(folder: Path, output: str) -> None:
    """Rank 0's files and rank 1's log in one folder; both ranks ended with the same weights."""
    assert (folder / "config.json").is_file() and (folder / "done").is_file()
    assert (folder / "sf_log.txt").is_file() and (folder / "sf_log_rank1.txt").is_file()
    assert len(list((folder / "checkpoint_p0").glob("checkpoint_*.pth"))) >= 1
    summaries = folder / ".summary" / "0"
    assert len(list(summaries.glob("events.out.tfevents.*"))) == 1  # rank 0's writer alone
    tags = read_scalars(str(summaries))
    assert {"perf/rank0_fps", "perf/rank1_fps", "perf/_fps"} <= set(tags), sorted(tags)
    digests = {rank: digest for digest, rank in DIGEST_RE.findall(output)}
    assert set(digests) == {"0", "1"} and digests["0"] == digests["1"], output[-4000:]


def test_processes_backend_runs_a_two_rank_experiment_under_torchrun(tmp_path: Path) -> None:
    train_dir = tmp_path / "td"
    before = shm_entries()
    code, output = run_launcher(
        [f"--run={_one_experiment(tmp_path, DISTRIBUTED_CARTPOLE)}", "--backend=processes", "--pause_between=0",
         "--num_gpus=0", "--ranks_per_experiment=2", f"--train_dir={train_dir}"],
        timeout=240,
    )  # fmt: skip
    assert code == 0, output
    assert table_rows(output)["00_cartpole"][1:3] == ["done", "0"], output
    logs = train_dir / "ddp" / "launcher_logs"
    assert "torch.distributed.run --standalone --nproc-per-node=2" in (logs / "00_cartpole.out").read_text()
    assert_one_distributed_experiment(train_dir / "ddp" / "00_cartpole", (logs / "00_cartpole.err").read_text())
    assert not processes_with(str(train_dir)), "experiment processes outlived the launcher"
    assert shm_entries() - before == set()


def _pool_running_on(gpu_lists: list[list[int]]) -> LocalPool:
    """A pool of 4 GPUs, one experiment per GPU, two ranks per experiment, with experiments running on ``gpu_lists``."""
    running = [SimpleNamespace(status="running", gpus=gpus) for gpus in gpu_lists]
    options = PoolOptions(max_parallel=8, num_gpus=4, experiments_per_gpu=1, pause_between=0, ranks_per_experiment=2)
    return LocalPool(running, options, status=None)


def test_a_two_rank_experiment_counts_on_both_of_its_gpus() -> None:
    """Counted on its first GPU only, the experiment on GPUs 0 and 1 would leave GPU 1 looking free."""
    assert _pool_running_on([[0, 1]])._pick_gpu() == 2
    assert _pool_running_on([[0, 1], [2, 3]])._pick_gpu() == NO_SLOT
    assert _pool_running_on([[1, 2]])._pick_gpu() == 3  # 3 and 0 are free; 0 would share GPU 1
