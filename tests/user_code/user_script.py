"""Run one conformance case as its user would: train in parallel mode, train in serial mode, enjoy both.

    python tests/user_code/user_script.py CASE --train_dir=DIR [more flags]

Each phase starts with a line ``=== <phase>`` and ends with ``=== <phase> status <code>``; the process exits with the
first non-zero status. Experiments are named ``CASE_serial`` and ``CASE_parallel``.

Parallel training comes first, as in a user's fresh process: this process has then run no parallel torch operation
yet, so its workers start from a copy of it. After a serial phase its OpenMP pool rules that out, and the parallel
phase would pay a new fork server's torch import and the fork probe's wait (``forked_server.fork_blocker``), about
4 s per case for nothing the tests look at.
"""

from __future__ import annotations

import os
import sys

from user_cases import CASES
from user_models import MARKERS_ENV, PHASE_ENV

from sample_factory.enjoy import enjoy

ENJOY_EPISODES = 2


def run_phase(phase: str, call) -> int:
    print(f"=== {phase}", flush=True)
    os.environ[PHASE_ENV] = phase.replace(" ", "_")  # worker processes started in this phase inherit it
    status = call()
    print(f"=== {phase} status {status}", flush=True)
    return status


def main(argv: list[str]) -> int:
    name, flags = argv[0], argv[1:]
    case = CASES[name]
    case.register()
    if case.distributions:  # the registered distributions leave markers where they were used
        train_dir = next(flag.split("=", 1)[1] for flag in flags if flag.startswith("--train_dir="))
        os.environ[MARKERS_ENV] = os.path.join(train_dir, "distribution_markers")
        os.makedirs(os.environ[MARKERS_ENV], exist_ok=True)
    for mode in ("parallel", "serial"):
        args = [*flags, f"--experiment={name}_{mode}", f"--serial_mode={mode == 'serial'}"]
        status = run_phase(f"train {mode}", lambda args=args: case.train(case.parse(args)))
        if status:
            return status
    for mode in ("serial", "parallel"):
        args = [*flags, f"--experiment={name}_{mode}", "--no_render", f"--max_num_episodes={ENJOY_EPISODES}"]
        status = run_phase(f"enjoy {mode}", lambda args=args: enjoy(case.parse(args, evaluation=True))[0])
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
