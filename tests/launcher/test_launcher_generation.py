"""What the Slurm and NGC backends generate, checked without a cluster: sbatch flags, job scripts, NGC commands."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from launcher_helpers import SWEEP_NAMES, run_launcher, sweep_module, write_run_module

from sample_factory.launcher.launcher_utils import LauncherError
from sample_factory.launcher.run import load_run_description
from sample_factory.launcher.slurm_script import parse_timeout


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("90", 90), ("1.5m", 90), ("3h", 10800), ("1d", 86400), ("1:30:00", 5400), ("2-00:00:00", 172800)],
)
def test_parse_timeout(text: str, seconds: float) -> None:
    assert parse_timeout(text) == seconds


def test_bad_timeout_says_what_is_accepted() -> None:
    with pytest.raises(LauncherError, match="not a duration: use seconds or a number with s/m/h/d"):
        parse_timeout("3 hours")


def _print_only(tmp_path: Path, module: Path, *flags: str) -> tuple[list[list[str]], Path]:
    workdir = tmp_path / "work"
    code, output = run_launcher(
        [f"--run={module}", "--backend=slurm", "--slurm_print_only=True", f"--train_dir={tmp_path / 'td'}",
         f"--slurm_workdir={workdir}", *flags]
    )  # fmt: skip
    assert code == 0, output
    sbatch_lines = [shlex.split(line) for line in output.splitlines() if line.startswith("sbatch ")]
    return sbatch_lines, workdir


def test_slurm_print_only_cpu_jobs(tmp_path: Path) -> None:
    lines, workdir = _print_only(tmp_path, sweep_module(tmp_path), "--slurm_gpus_per_job=0", "--slurm_partition=cpu")
    assert len(lines) == 4
    for line, name in zip(lines, SWEEP_NAMES, strict=True):
        assert f"--job-name=sweep-{name}" in line and "--partition=cpu" in line and "--cpus-per-task=14" in line
        assert not any(flag.startswith(("--gres", "--time")) for flag in line)
        assert line[-2:] == [str(workdir / f"{name}.sh"), "1"]
    assert not (tmp_path / "td" / "sweep").exists()  # nothing submitted, so no experiment folder yet
    script = (workdir / f"{SWEEP_NAMES[0]}.sh").read_text()
    command = load_run_description(str(tmp_path / "sweep.py")).generate_experiments(str(tmp_path / "td"))[0]
    assert shlex.join(command.argv()) in script and "timeout --signal" not in script
    subprocess.run(["bash", "-n", str(workdir / f"{SWEEP_NAMES[0]}.sh")], check=True)
    helper = (workdir / "cancel_sweep.sh").read_text()
    assert all(f"--name=sweep-{name}" in helper and f"{name}.cancelled" in helper for name in SWEEP_NAMES)


def test_slurm_gpu_jobs_with_timeout_and_template(tmp_path: Path) -> None:
    template = tmp_path / "preamble.sh"
    template.write_text("source /opt/venvs/sf/bin/activate\n")
    lines, workdir = _print_only(
        tmp_path, sweep_module(tmp_path), "--slurm_gpus_per_job=2", "--slurm_cpus_per_gpu=8",
        "--slurm_timeout=1h", f"--slurm_sbatch_template={template}",
    )  # fmt: skip
    assert {"--gres=gpu:2", "--cpus-per-task=16", "--time=63"} <= set(lines[0])  # 3600 + 120 s grace + 60 s margin
    script = (workdir / f"{SWEEP_NAMES[0]}.sh").read_text()
    assert "source /opt/venvs/sf/bin/activate" in script
    assert "timeout --signal=TERM --kill-after=120 3600 " in script
    assert "--restart_behavior=resume" not in script  # resume is already the default behaviour
    subprocess.run(["bash", "-n", str(workdir / f"{SWEEP_NAMES[0]}.sh")], check=True)


def test_resubmission_forces_resume_when_the_command_restarts(tmp_path: Path) -> None:
    module = write_run_module(tmp_path, "rs", 'Experiment("e", "python -m train --restart_behavior restart")')
    _, workdir = _print_only(tmp_path, module, "--slurm_timeout=10")
    script = (workdir / "00_e.sh").read_text()
    first, later = script.split("else\n")[1], script.split("else\n")[0]
    assert "--restart_behavior=resume" in later and "--restart_behavior=resume" not in first.split("fi\n")[0]


def test_slurm_template_that_cannot_be_read(tmp_path: Path) -> None:
    code, output = run_launcher(
        [f"--run={sweep_module(tmp_path)}", "--backend=slurm", "--slurm_print_only=True",
         f"--train_dir={tmp_path}", f"--slurm_sbatch_template={tmp_path / 'missing.sh'}"]
    )  # fmt: skip
    assert code == 2 and "missing.sh: cannot read it (No such file or directory)" in output


def test_ngc_template_that_cannot_be_read(tmp_path: Path) -> None:
    code, output = run_launcher(
        [f"--run={sweep_module(tmp_path)}", "--backend=ngc", "--ngc_print_only=True",
         f"--train_dir={tmp_path}", f"--ngc_job_template={tmp_path / 'missing.txt'}"]
    )  # fmt: skip
    assert code == 2 and "--ngc_job_template=" in output and "missing.txt: cannot read it" in output


TRICKY = 'a "b" $HOME `x` \\\\ end'


def test_ngc_print_only_commands_round_trip_through_the_shell(tmp_path: Path) -> None:
    """Each generated line, run by bash with a stand-in ``ngc``, hands NGC exactly the experiment's command."""
    module = write_run_module(
        tmp_path, "ngcrun", f'Experiment("e", "python -m train", ParamList([{{"note": {TRICKY!r}}}, {{"note": "x"}}]))'
    )
    code, output = run_launcher([f"--run={module}", "--backend=ngc", "--ngc_print_only=True", "--train_dir=/td"])
    assert code == 0, output
    lines = [line for line in output.splitlines() if line.startswith("ngc batch run")]
    commands = load_run_description(str(module)).generate_experiments("/td")
    assert len(lines) == len(commands) == 2
    for line, command in zip(lines, commands, strict=True):
        fake_ngc = 'ngc() { for a in "$@"; do printf "%s\\0" "$a"; done; }; '
        args = subprocess.run(["bash", "-c", fake_ngc + line], capture_output=True, text=True, check=True).stdout
        args = args.split("\0")[:-1]
        assert args[:4] == ["batch", "run", "--name", f"ngcrun-{command.name}"]
        assert args[args.index("--commandline") + 1] == f"cd /workspace/sample-factory && {command.cmd}"
    assert f"--note={TRICKY}" in shlex.split(commands[0].cmd)


def test_ngc_custom_template_and_bad_placeholder(tmp_path: Path) -> None:
    module = sweep_module(tmp_path)
    template = tmp_path / "ngc.txt"
    template.write_text('# my org\nngc batch run --name $name \\\n  --commandline "$command"\n')
    code, output = run_launcher([f"--run={module}", "--backend=ngc", "--ngc_print_only=True",
                                 f"--ngc_job_template={template}"])  # fmt: skip
    assert code == 0 and f"ngc batch run --name {SWEEP_NAMES[0]} --commandline " in output
    template.write_text("ngc batch run --name $experiment\n")
    code, output = run_launcher([f"--run={module}", "--backend=ngc", "--ngc_print_only=True",
                                 f"--ngc_job_template={template}"])  # fmt: skip
    assert code == 2 and "unknown or malformed placeholder 'experiment'" in output


@pytest.mark.skipif(shutil.which("ngc") is not None, reason="the ngc CLI is installed here")
def test_ngc_without_cli_asks_for_print_only(tmp_path: Path) -> None:
    code, output = run_launcher([f"--run={sweep_module(tmp_path)}", "--backend=ngc"])
    assert code == 2 and "the ngc CLI is not on PATH" in output and "--ngc_print_only=True" in output


def test_status_file_reading_follows_the_latest_submission(tmp_path: Path) -> None:
    from sample_factory.launcher.slurm_script import SlurmJobFiles
    from sample_factory.launcher.slurm_wait import TrackedJob, refresh_from_status_file

    files = SlurmJobFiles.in_workdir(str(tmp_path), "00_e")
    Path(files.status).write_text(
        "=== submitted job 7 at earlier\nattempt 1 (job 7) started on n at t\nfinal exit 2: attempt 1 (job 7) at t\n"
        "=== submitted job 9 at now\nattempt 1 (job 9) started on n at t\n"
        "attempt 1 (job 9) timed out after 60s: resubmitted as job 10\nattempt 2 (job 10) started on n at t\n"
    )
    job = TrackedJob("00_e", "run-00_e", files, "9")
    refresh_from_status_file(job)
    assert (job.status, job.attempts, job.job_id, job.finished()) == ("pending", 2, "10", False)
    with open(files.status, "a") as f:
        f.write("final timeout: attempt 2 (job 10) timed out, 1 resubmissions used (--slurm_max_resubmits)\n")
    refresh_from_status_file(job)
    assert (job.status, job.finished()) == ("timeout", True)
