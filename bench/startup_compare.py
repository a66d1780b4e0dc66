"""Start-up and shut-down of training runs, side by side: two checkouts of this repository, or one checkout under two
environments (e.g. ``SF_WORKER_START_METHOD=spawn`` against the default fork server), runs alternated.

Every figure comes from outside the process or from log lines both old and new versions print, so a checkout from
before the start-up report existed can be measured the same way:

- *to first frame*: from launching the command to the runner's ``All N components ready, collecting experience``
  line (the first frames are collected right after it);
- *after last frame*: from the ``Reached N env steps`` line to the exit of the process;
- *whole process*: from launching the command to the exit of the process.

python bench/startup_compare.py --label before=/path/to/old/checkout --label after=. --reps=3 cartpole doom_basic
python bench/startup_compare.py --label spawn=.:SF_WORKER_START_METHOD=spawn --label forkserver=. cartpole
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import records  # noqa: E402

WORKLOADS: dict[str, list[str]] = {
    "cartpole": ["sf_examples.train_gym_env", "--env=CartPole-v1", "--num_workers=2", "--num_envs_per_worker=8",
                 "--train_for_env_steps=100000", "--device=cpu", "--seed=1"],
    "doom_basic": ["sf_examples.vizdoom.train_vizdoom", "--env=doom_basic", "--num_workers=2",
                   "--num_envs_per_worker=4", "--train_for_env_steps=100000", "--device=cpu", "--seed=1"],
}  # fmt: skip
READY = re.compile(r"^\S*\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]\[\d+\] All \d+ components ready", re.M)
REACHED = re.compile(r"^\S*\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]\[\d+\] Reached \d+ env steps", re.M)


@dataclass(frozen=True)
class Variant:
    """A labelled checkout and the extra environment variables its runs get."""

    label: str
    root: Path
    env: dict[str, str]


@dataclass(frozen=True)
class Timings:
    to_first_frame: float
    after_last_frame: float
    whole: float


def parse_variant(text: str) -> Variant:
    """``label=path[:VAR=value[,VAR=value...]]``."""
    label, _, rest = text.partition("=")
    path, _, env_text = rest.partition(":")
    if not label or not path:
        raise argparse.ArgumentTypeError(f"--label {text!r}: expected label=path[:VAR=value,...]")
    env = dict(item.split("=", 1) for item in env_text.split(",") if item)
    return Variant(label, Path(path).resolve(), env)


def log_time(stamp: str) -> float:
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def python_of(root: Path) -> str:
    venv_python = root / ".venv" / "bin" / "python"
    return str(venv_python) if venv_python.exists() else sys.executable


def run_once(variant: Variant, workload: str, train_dir: Path, log_path: Path, python: str | None) -> Timings:
    module, *args = WORKLOADS[workload]
    env = {**os.environ, "PYTHONPATH": str(variant.root), **variant.env}
    cmd = [python or python_of(variant.root), "-m", module, *args, f"--train_dir={train_dir}", "--experiment=run"]
    with open(log_path, "w") as out:
        started = time.time()
        code = subprocess.run(cmd, cwd=variant.root, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
        ended = time.time()
    text = log_path.read_text(errors="replace")
    ready, reached = READY.search(text), REACHED.search(text)
    if code != 0 or ready is None or reached is None:
        raise RuntimeError(f"{variant.label} {workload}: exit {code}, start or stop line missing; see {log_path}")
    return Timings(log_time(ready.group(1)) - started, ended - log_time(reached.group(1)), ended - started)


def table(workload: str, results: dict[str, list[Timings]]) -> str:
    rows = [f"{workload} (median of {min(len(r) for r in results.values())} runs each)",
            "| | " + " | ".join(results) + " |", "| --- |" + " --- |" * len(results)]  # fmt: skip
    for field, title in (("to_first_frame", "to first frame, s"), ("after_last_frame", "after last frame, s"),
                         ("whole", "whole process, s")):  # fmt: skip
        medians = [statistics.median(getattr(t, field) for t in runs) for runs in results.values()]
        rows.append(f"| {title} | " + " | ".join(f"{m:.1f}" for m in medians) + " |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="+", choices=sorted(WORKLOADS))
    parser.add_argument("--label", type=parse_variant, action="append", required=True,
                        help="label=checkout[:VAR=value,...]; give two or more")  # fmt: skip
    parser.add_argument("--reps", type=int, default=3, help="runs of each variant")
    parser.add_argument("--python", default=None, help="interpreter for every variant (default: each one's .venv)")
    parser.add_argument("--scratch", type=Path, default=None, help="logs and train_dir (default: a temporary folder)")
    parser.add_argument("--results_dir", type=Path, default=None, help="where the records go (default: bench/results)")
    parser.add_argument("--no_record", action="store_true", help="append no record to bench/results/startup.jsonl")
    args = parser.parse_args()
    made: list[dict] = []
    set_id = records.new_set_id("startup")
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="sf-startup-"))
    scratch.mkdir(parents=True, exist_ok=True)
    for workload in args.workloads:
        results: dict[str, list[Timings]] = {v.label: [] for v in args.label}
        for rep in range(args.reps):
            for variant in args.label:  # alternated: drift of the machine hits every variant alike
                name = f"{workload}_{variant.label}_{rep}"
                timings = run_once(variant, workload, scratch / name, scratch / f"{name}.log", args.python)
                results[variant.label].append(timings)
                print(f"{name}: to first frame {timings.to_first_frame:.1f} s, after last frame "
                      f"{timings.after_last_frame:.1f} s, whole {timings.whole:.1f} s", flush=True)  # fmt: skip
        print(table(workload, results), flush=True)
        made.extend(startup_records(workload, results, args.label, set_id))
    if not args.no_record:
        for path in records.append(made, args.results_dir or records.RESULTS_DIR):
            print(f"# records appended to {path}")
    return 0


def startup_records(
    workload: str, results: dict[str, list[Timings]], variants: list[Variant], set_id: str
) -> list[dict]:
    """One ``startup`` record per variant: the medians over its runs, and every run's figures."""
    command = "python bench/startup_compare.py " + " ".join(sys.argv[1:])
    made = []
    for variant in variants:
        runs = results[variant.label]
        figures = {
            "variant": variant.label,
            "variant_commit": records.git_commit(variant.root),
            "variant_env": variant.env,
            "runs": len(runs),
            "statistic": "median",
            "to_first_frame_s": round(statistics.median(t.to_first_frame for t in runs), 2),
            "after_last_frame_s": round(statistics.median(t.after_last_frame for t in runs), 2),
            "whole_s": round(statistics.median(t.whole for t in runs), 2),
            "each_run": [[round(t.to_first_frame, 2), round(t.after_last_frame, 2), round(t.whole, 2)] for t in runs],
        }
        made.append(records.make_record("startup", set_id, command, workload, figures))
    return made


if __name__ == "__main__":
    sys.exit(main())
