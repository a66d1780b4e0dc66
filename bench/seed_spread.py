"""How the early training reward of a task spreads over seeds, here and in the Sample Factory 2.1.1 release.

    python bench/seed_spread.py mujoco_halfcheetah --seeds=1-8 --stop_at=1500000

Some tasks send each run down one of a few paths early and keep it there: a HalfCheetah run either finds a fast gait
within ~1.5M env steps or stays near 2,000 for millions of steps. Full-budget runs of a few seeds cannot tell whether
one implementation takes the slow path more often than the other; many short runs can. For each seed this trains the
task with this package and with the release (one after the other, so that a change in the machine's load falls on
both), each with the zoo's command and budget (so a budget-long ``linear_decay`` schedule is at the same point at the
same step), and stops each at ``--stop_at`` env steps. Every run appends one ``seed_spread`` record to
``bench/results/seed_spread.jsonl``: the implementation, the seed, the average training reward of the run's first
summary at ``--stop_at`` (``reward``) and its curve. docs/zoo.md sets the seeds of both side by side.

The runs are written under ``--train_dir`` (default ``/tmp/seed_spread``), one experiment per implementation and
seed, each started afresh (``--restart_behavior=overwrite``) since a resumed run would not measure the same thing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare_sf2  # noqa: E402
import records  # noqa: E402
import zoo  # noqa: E402
import zoo_reference  # noqa: E402
import zoo_report  # noqa: E402
from zoo_tasks import TASKS, ZooTask  # noqa: E402

KIND = "seed_spread"
OURS = "ours"
RELEASE = "sf2_2.1.1"
IMPLEMENTATIONS = (OURS, RELEASE)


def parse_seeds(text: str) -> list[int]:
    """``1-8`` or ``1,3,5`` (or a mix: ``1-3,7``) as a list of seeds in the given order, without repeats."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a seed or a range such as 1-8") from None
        if last < first:
            raise argparse.ArgumentTypeError(f"the range {part!r} runs backwards; write {last}-{first}")
        seeds.extend(s for s in range(first, last + 1) if s not in seeds)
    if not seeds:
        raise argparse.ArgumentTypeError("no seed given (e.g. --seeds=1-8)")
    return seeds


def experiment_name(implementation: str, task: str, seed: int) -> str:
    return f"spread_{implementation}_{task}_s{seed}"


def our_command(task: ZooTask, train_dir: str, experiment: str, seed: int) -> list[str]:
    """The zoo's training command, started afresh instead of resumed."""
    command = zoo.train_command(sys.executable, task, train_dir, experiment, seed, task.budget)
    return ["--restart_behavior=overwrite" if arg == "--restart_behavior=resume" else arg for arg in command]


def command_for(implementation: str, name: str, train_dir: str, seed: int, release_python: str | None) -> list[str]:
    """The training command of one implementation on the zoo task ``name``."""
    task = TASKS[name]
    experiment = experiment_name(implementation, name, seed)
    if implementation == OURS:
        return our_command(task, train_dir, experiment, seed)
    assert release_python is not None, "the release's python is needed for its runs"
    return zoo_reference.reference_command(release_python, task, train_dir, experiment, seed)


def run_figures(implementation: str, seed: int, task: ZooTask, stop_at: int, curve: list[tuple[int, float]],
                wall_s: float) -> dict:  # fmt: skip
    """A run's record figures: ``reward`` is the average episode reward of its first summary at or past ``stop_at``
    (the run itself is stopped a little later: ``env_steps``)."""
    return {
        "implementation": implementation,
        "seed": seed,
        "budget": task.budget,
        "stop_at": stop_at,
        "env_steps": curve[-1][0],
        "reward": zoo_report.reward_at_step(curve, stop_at),
        "wall_s": round(wall_s, 1),
        "curve": [[steps, round(reward, 4)] for steps, reward in zoo_reference.thin(curve)],
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=sorted(name for name, task in TASKS.items() if not task.unavailable))
    parser.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-8"), help="e.g. 1-8 or 1,3,5")
    parser.add_argument("--stop_at", type=int, required=True, help="env steps each run is stopped at")
    parser.add_argument(
        "--implementations", default=",".join(IMPLEMENTATIONS), help=f"comma-separated, of {', '.join(IMPLEMENTATIONS)}"
    )
    parser.add_argument("--ref_venv", default="/tmp/sf2ref-venv", help="the release's venv (installed when missing)")
    parser.add_argument("--torch", default="torch==2.13.0", help="torch requirement of the release's venv")
    parser.add_argument("--train_dir", default="/tmp/seed_spread")
    parser.add_argument("--results_dir", default=str(records.RESULTS_DIR), help="where the records go")
    args = parser.parse_args(argv)
    args.implementations = [name.strip() for name in args.implementations.split(",") if name.strip()]
    unknown = sorted(set(args.implementations) - set(IMPLEMENTATIONS))
    if unknown or not args.implementations:
        given = ", ".join(unknown) or "none given"
        parser.error(f"--implementations: {given}; choose from {', '.join(IMPLEMENTATIONS)}")
    if args.stop_at <= 0:
        parser.error("--stop_at must be a positive number of env steps")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    task = TASKS[args.task]
    release_python = None
    if RELEASE in args.implementations:
        extras = zoo_reference.FAMILY_EXTRAS.get(zoo_reference.family(task), set())
        release_python = compare_sf2.ensure_reference(args.ref_venv, args.torch, extras)
    Path(args.train_dir).mkdir(parents=True, exist_ok=True)
    set_id = records.new_set_id(KIND)
    failures = 0
    for seed in args.seeds:
        for implementation in args.implementations:
            command = command_for(implementation, args.task, args.train_dir, seed, release_python)
            log_path = Path(args.train_dir) / f"{experiment_name(implementation, args.task, seed)}.log"
            print("# " + " ".join(command), flush=True)
            curve, wall_s = zoo_reference.run_reference(command, log_path, args.stop_at)
            if not curve:
                print(f"# {implementation}, seed {seed}: the run printed no summaries: see {log_path}", flush=True)
                failures += 1
                continue
            figures = run_figures(implementation, seed, task, args.stop_at, curve, wall_s)
            print(f"# {implementation}, seed {seed}: {figures['reward']:.1f} at {figures['env_steps']:,} env steps")
            extra = {"reference_versions": records.versions(release_python)} if implementation == RELEASE else {}
            record = records.make_record(KIND, set_id, " ".join(command), args.task, figures, **extra)
            records.append([record], Path(args.results_dir))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
