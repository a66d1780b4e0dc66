"""Text of the Slurm job scripts, the sbatch options and the cancel script (pure functions, no Slurm needed).

One job script per experiment. It runs the user's template (environment set-up) and then the experiment's
command, under ``timeout`` when ``--slurm_timeout`` is set. A command that times out got SIGTERM first (Sample
Factory saves its checkpoints on it), and the script submits itself again: the next attempt resumes from the
checkpoint, with ``--restart_behavior=resume`` appended when the command asked for another behaviour. Every
attempt appends a line to ``<name>.status`` and the last attempt a ``final ...`` line, which is how the launcher's
``--slurm_wait`` tells a finished job from one that is only being resubmitted.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass

from sample_factory.launcher.distributed_commands import srun_rank_setup
from sample_factory.launcher.launcher_utils import LauncherError
from sample_factory.launcher.run_description import ExperimentCommand

# after SIGTERM the run has this long to save checkpoints before timeout sends SIGKILL
KILL_AFTER_S = 120
# Slurm's own limit is set this much beyond ours so that Slurm never kills a job the time-out would stop cleanly
SLURM_TIME_MARGIN_S = 60
TIMED_OUT_EXIT_CODE = 124  # GNU timeout's exit code when the command ran out of time

DEFAULT_SBATCH_TEMPLATE = """\
# Environment set-up, run inside each job before the experiment's command (--slurm_sbatch_template replaces it):
# e.g. `module load cuda`, `source ~/venvs/sf/bin/activate` or `conda activate sf`. sbatch exports the submitting
# shell's environment, so a virtual environment active when you launched usually needs nothing here.
echo "[slurm job $SLURM_JOB_ID] host $(hostname), CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-none}, cwd $(pwd)"
"""

_DURATION_RE = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_CLOCK_RE = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_RESTART_RE = re.compile(r"^--restart_behavior(?:=(.*))?$")


def parse_timeout(value: str) -> float:
    """Seconds from ``--slurm_timeout`` ("0" = none, "90m", "3h", "1d", "3600", "1:30:00", "2-00:00:00")."""
    text = value.strip()
    duration = _DURATION_RE.match(text)
    if duration:
        return float(duration.group(1)) * _UNIT_S[duration.group(2)]
    clock = _CLOCK_RE.match(text)
    if clock:
        days, hours, minutes, seconds = (int(g) if g else 0 for g in clock.groups())
        return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)
    raise LauncherError(
        f"--slurm_timeout={value!r} is not a duration: use seconds or a number with s/m/h/d (90m, 3h, 1d), "
        f"or H:MM:SS / D-HH:MM:SS; 0 means no time limit"
    )


@dataclass
class SlurmJobFiles:
    """Where one experiment's job keeps its script, logs and markers (all inside --slurm_workdir)."""

    script: str
    log: str  # stdout and stderr of every attempt
    status: str
    cancelled: str

    @staticmethod
    def in_workdir(workdir: str, name: str) -> SlurmJobFiles:
        base = f"{workdir}/{name}"
        return SlurmJobFiles(f"{base}.sh", f"{base}.log", f"{base}.status", f"{base}.cancelled")


@dataclass
class SlurmOptions:
    partition: str | None
    gpus_per_job: int
    cpus_per_gpu: int
    timeout_s: float
    max_resubmits: int
    nodes: int = 1
    tasks_per_node: int = 1  # more than one task in all: each task is a rank of one distributed experiment

    def cpus_per_job(self) -> int:
        """CPUs of each task: CPU-only jobs (no GPU) get the CPUs of one GPU's share."""
        return self.cpus_per_gpu * max(1, self.gpus_per_job)

    @property
    def ranks(self) -> int:
        return self.nodes * self.tasks_per_node


def job_name(run_name: str, experiment_name: str) -> str:
    return f"{run_name}-{experiment_name}"


def sbatch_options(name: str, files: SlurmJobFiles, options: SlurmOptions, chdir: str) -> list[str]:
    """The sbatch flags of a job; the script resubmits itself with the same ones."""
    flags = [
        f"--job-name={name}",
        f"--output={files.log}",  # stderr too: one log per experiment, in the order things happened
        "--open-mode=append",  # every attempt's output in the same file
        f"--chdir={chdir}",
        f"--cpus-per-task={options.cpus_per_job()}",
    ]
    if options.partition:
        flags.append(f"--partition={options.partition}")
    if options.gpus_per_job > 0:
        flags.append(f"--gres=gpu:{options.gpus_per_job}")
    if options.timeout_s > 0:
        minutes = math.ceil((options.timeout_s + KILL_AFTER_S + SLURM_TIME_MARGIN_S) / 60)
        flags.append(f"--time={minutes}")
    if options.ranks > 1:
        flags += [f"--nodes={options.nodes}", f"--ntasks-per-node={options.tasks_per_node}"]
    return flags


def _resume_args(argv: list[str]) -> list[str]:
    """Extra arguments for a resubmitted attempt: force resume when the command chose another restart behaviour."""
    for i, token in enumerate(argv):
        match = _RESTART_RE.match(token)
        if match:
            value = match.group(1) if match.group(1) is not None else (argv[i + 1] if i + 1 < len(argv) else "")
            if value != "resume":
                return ["--restart_behavior=resume"]
    return []


def _env_exports(command: ExperimentCommand) -> str:
    return "".join(f"export {key}={shlex.quote(value)}\n" for key, value in (command.env_vars or {}).items())


def _run_block(command: ExperimentCommand, options: SlurmOptions) -> str:
    """The command line, wrapped in timeout when there is a time limit, and in srun (one rank per task) when the
    job has several tasks: a distributed experiment."""
    argv = command.argv()
    cmd = shlex.join(argv)
    setup, prefix = srun_rank_setup() if options.ranks > 1 else ("", "")
    if options.timeout_s > 0:
        prefix = f"timeout --signal=TERM --kill-after={KILL_AFTER_S} {options.timeout_s:g} {prefix}"
    resume = shlex.join(_resume_args(argv)) if options.timeout_s > 0 else ""
    if not resume:
        return f"{setup}{prefix}{cmd}\nSF_EXIT=$?\n"
    return (
        f'{setup}if [ "$SF_ATTEMPT" -gt 1 ]; then\n    {prefix}{cmd} {resume}\nelse\n    {prefix}{cmd}\nfi\n'
        "SF_EXIT=$?\n"
    )


def _resubmit_block(files: SlurmJobFiles, flags: list[str], options: SlurmOptions) -> str:
    if options.timeout_s <= 0:
        return ""
    sbatch = shlex.join(["sbatch", "--parsable", *flags, files.script])
    status = shlex.quote(files.status)
    return f"""\
if [ "$SF_EXIT" -eq {TIMED_OUT_EXIT_CODE} ]; then
    if [ -e {shlex.quote(files.cancelled)} ]; then
        echo "final cancelled: attempt $SF_ATTEMPT (job $SLURM_JOB_ID) timed out after the run was cancelled" >> {status}
        exit $SF_EXIT
    fi
    if [ "$SF_ATTEMPT" -gt {options.max_resubmits} ]; then
        echo "final timeout: attempt $SF_ATTEMPT (job $SLURM_JOB_ID) timed out, {options.max_resubmits} resubmissions used (--slurm_max_resubmits)" >> {status}
        exit $SF_EXIT
    fi
    if SF_NEXT=$({sbatch} $((SF_ATTEMPT + 1)) 2>&1); then
        echo "attempt $SF_ATTEMPT (job $SLURM_JOB_ID) timed out after {options.timeout_s:g}s: resubmitted as job ${{SF_NEXT%%;*}}" >> {status}
        exit 0
    fi
    echo "final failed: attempt $SF_ATTEMPT (job $SLURM_JOB_ID) timed out and resubmission failed: $SF_NEXT" >> {status}
    exit 1
fi
"""  # noqa: E501


def job_script(
    command: ExperimentCommand, files: SlurmJobFiles, flags: list[str], options: SlurmOptions, template: str
) -> str:
    """The bash script of one experiment's job; ``$1`` is the attempt number (1 on the first submission)."""
    status = shlex.quote(files.status)
    return f"""\
#!/bin/bash
# Slurm job of experiment {command.name}, written by `python -m sample_factory.launcher.run --backend=slurm`.
# Attempt number in $1; after a time-out (--slurm_timeout) the script submits itself again with the next number.
SF_ATTEMPT="${{1:-1}}"
echo "attempt $SF_ATTEMPT (job $SLURM_JOB_ID) started on $(hostname) at $(date '+%Y-%m-%d %H:%M:%S')" >> {status}

# ---- template (--slurm_sbatch_template) ----
{template.rstrip()}
# ---- end of template ----

{_env_exports(command)}{_run_block(command, options)}{_resubmit_block(files, flags, options)}
echo "final exit $SF_EXIT: attempt $SF_ATTEMPT (job $SLURM_JOB_ID) at $(date '+%Y-%m-%d %H:%M:%S')" >> {status}
exit $SF_EXIT
"""


def cancel_script(run_name: str, names: list[str], files: list[SlurmJobFiles]) -> str:
    """Cancels every job of the run, resubmissions included: markers first, so no timed-out job resubmits."""
    markers = " ".join(shlex.quote(f.cancelled) for f in files)
    cancels = "\n".join(f'scancel --user="$(id -un)" --name={shlex.quote(n)}' for n in names)
    return f"""\
#!/bin/bash
# Cancels every Slurm job of run {run_name} (written by sample_factory.launcher.run --backend=slurm).
touch {markers}
{cancels}
echo "cancelled the jobs of run {run_name}"
"""
