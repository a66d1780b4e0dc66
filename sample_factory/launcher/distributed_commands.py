"""How the backends start one experiment as several ranks of a distributed run (docs/distributed.md).

- processes backend: the experiment's Python command runs under ``torchrun --standalone --nproc-per-node=N``, which
  starts N ranks on this machine, gives them their ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT`` and a free
  port of their own (so several distributed experiments can run side by side);
- slurm backend: ``srun`` starts one task per rank on the job's nodes; each task exports its rank from Slurm's
  variables (``SLURM_PROCID``, ``SLURM_LOCALID``, ``SLURM_NTASKS``) and meets the others at the job's first node, on a
  port derived from the job id (``SF_MASTER_PORT`` in the environment overrides it).

Pure functions over command lines and script text: the launcher never imports torch.
"""

from __future__ import annotations

import os
import shlex
import sys

from sample_factory.launcher.launcher_utils import LauncherError

# the port rank 0 serves the ranks' store on, in a Slurm job: this base plus the job id modulo the span
SLURM_PORT_BASE = 20000
SLURM_PORT_SPAN = 20000


def _is_python(executable: str) -> bool:
    name = os.path.basename(executable)
    return executable == sys.executable or name.startswith("python")


def torchrun_argv(argv: list[str], ranks: int) -> list[str]:
    """``python [options] (-m module | script.py) args`` as the same command under ``torchrun`` with ``ranks`` ranks."""
    if not argv or not _is_python(argv[0]):
        raise LauncherError(
            f"--ranks_per_experiment={ranks} starts each experiment under torchrun, which runs Python: the command "
            f"must start with a Python interpreter (python -m module ... or python script.py ...), not {argv[:1]}"
        )
    rest = argv[1:]
    target = next((i for i, token in enumerate(rest) if token == "-m" or not token.startswith("-")), None)
    if target is None:
        raise LauncherError(f"command {shlex.join(argv)!r} names no module (-m) or script for torchrun to run")
    torchrun = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"]
    return [argv[0], *rest[:target], *torchrun, *rest[target:]]


def srun_rank_setup() -> tuple[str, str]:
    """Lines of a Slurm job script that describe the job's ranks, and the prefix that runs a command once per task,
    each task exporting its own rank before it starts."""
    port = f"$(({SLURM_PORT_BASE} + SLURM_JOB_ID % {SLURM_PORT_SPAN}))"
    per_task = 'export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID; exec "$@"'
    setup = (
        "# a distributed experiment, one rank per task: rank 0 serves the ranks' store on the job's first node\n"
        'export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"\n'
        f'export MASTER_PORT="${{SF_MASTER_PORT:-{port}}}"\n'
        'export WORLD_SIZE="$SLURM_NTASKS"\n'
    )
    return setup, f"srun --kill-on-bad-exit=1 bash -c {shlex.quote(per_task)} sf-rank "
