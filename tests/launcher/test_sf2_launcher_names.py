"""Sample Factory 2's launcher names: ``run.parse_args``, the backends' ``add_*_args``, ``run_ngc``, ``run_slurm``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from sample_factory.launcher import run_ngc, run_processes, run_slurm
from sample_factory.launcher.run import launcher_argparser, parse_args
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription


def _description() -> RunDescription:
    grid = ParamGrid([("seed", [1, 2])])
    return RunDescription("sf2names", experiments=[Experiment("exp", "python -m train --env=CartPole-v1", grid)])


def test_parse_args_reads_the_command_line_and_checks_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    args = parse_args(["--run=pkg.sweep", "--backend=slurm", "--slurm_gpus_per_job=2"])
    assert (args.run, args.backend, args.slurm_gpus_per_job, args.slurm_timeout) == ("pkg.sweep", "slurm", 2, "0")

    monkeypatch.setattr(sys, "argv", ["run.py", "--run=pkg.sweep", "--max_parallel=3"])
    args = parse_args()
    assert (args.backend, args.max_parallel, args.num_gpus) == ("processes", 3, 1)

    with pytest.raises(SystemExit):
        parse_args(["--run=pkg.sweep", "--backend=ngc", "--slurm_partition=gpu"])  # a flag of another backend


@pytest.mark.parametrize(
    ("add_args", "flag", "default"),
    [
        (run_processes.add_os_parallelism_args, "max_parallel", 4),
        (run_slurm.add_slurm_args, "slurm_cpus_per_gpu", 14),
        (run_ngc.add_ngc_args, "ngc_print_only", False),
    ],
)
def test_add_backend_args_adds_that_backends_flags(add_args, flag: str, default) -> None:
    parser = argparse.ArgumentParser()
    assert add_args(parser) is parser
    assert getattr(parser.parse_args([]), flag) == default
    assert not hasattr(parser.parse_args([]), "run"), "only the backend's own flags"


def test_run_ngc_prints_one_command_per_experiment(capsys: pytest.CaptureFixture[str]) -> None:
    args = launcher_argparser(["--backend=ngc"]).parse_args(["--backend=ngc", "--ngc_print_only=True"])
    assert run_ngc.run_ngc(_description(), args) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("ngc batch run")]
    assert len(lines) == 2
    assert '--name "sf2names-00_exp_seed_1"' in lines[0] and "--seed=2" in lines[1]


def test_run_slurm_print_only_writes_one_job_script_per_experiment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--backend=slurm", "--slurm_print_only=True", f"--train_dir={tmp_path}", f"--slurm_workdir={tmp_path}/w"]
    args = launcher_argparser(argv).parse_args(argv)
    assert run_slurm.run_slurm(_description(), args) == 0
    sbatch = [line for line in capsys.readouterr().out.splitlines() if line.startswith("sbatch ")]
    assert len(sbatch) == 2
    assert sorted(p.name for p in (tmp_path / "w").glob("*.sh")) == [
        "00_exp_seed_1.sh",
        "01_exp_seed_2.sh",
        "cancel_sf2names.sh",
    ]
