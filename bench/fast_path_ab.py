"""What one module of ``sample_factory/compat`` buys: a training workload run alternately with its private paths on
and off (``SF_DISABLE_FAST_PATHS=<module>``), one record per pair.

    python bench/fast_path_ab.py torch_internals cartpole_matched --pairs=3
    python bench/fast_path_ab.py glibc_internals doom_basic_matched --pairs=3

The workloads are ``bench/compare_sf2.py``'s (this repository only). Each pair runs "on" then "off", or "off" then
"on" in every other pair, with the same seed (each pair the next one), so drift of the machine's speed and the order
within a pair hit both alike. The record keeps each run's reported FPS and whole-process wall time; the page
(``docs/gen_results.py``) shows the median of the per-pair ratios, on/off.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compare_sf2  # noqa: E402
import records  # noqa: E402

from sample_factory.compat import MODULES  # noqa: E402

DISABLE_ENV = "SF_DISABLE_FAST_PATHS"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", choices=MODULES, help="the compat module whose private paths are switched off")
    parser.add_argument("workload", choices=sorted(compare_sf2.WORKLOADS))
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1, help="the first pair's seed; each pair gets the next one")
    parser.add_argument("--limit_s", type=float, default=600.0, help="time limit of one run")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--scratch", default=None, help="logs and train_dir (default: a temporary folder)")
    parser.add_argument("--results_dir", type=Path, default=None, help="where the records go (default: bench/results)")
    parser.add_argument("--no_record", action="store_true")
    return parser.parse_args(argv)


def run(args: argparse.Namespace, scratch: str, label: str, seed: int, off: bool) -> compare_sf2.RunResult:
    workload = compare_sf2.WORKLOADS[args.workload]
    env = compare_sf2.child_env(compare_sf2.REPO_ROOT)
    env.pop(DISABLE_ENV, None)
    if off:
        env[DISABLE_ENV] = args.module
    command = compare_sf2.training_command(args.python, workload, scratch, label, seed)
    return compare_sf2.run_one(label, command, compare_sf2.REPO_ROOT, env, scratch, args.limit_s)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    scratch = args.scratch or tempfile.mkdtemp(prefix="fast_path_ab_")
    os.makedirs(scratch, exist_ok=True)
    set_id = records.new_set_id("fast_path_ab")
    command = " ".join(["python", "bench/fast_path_ab.py", *(argv if argv is not None else sys.argv[1:])])
    fps_ratios, wall_ratios, new_records = [], [], []
    for pair in range(args.pairs):
        seed = args.seed + pair
        order = (False, True) if pair % 2 == 0 else (True, False)
        results = {}
        for off in order:
            label = f"p{pair}_{'off' if off else 'on'}"
            results[off] = run(args, scratch, label, seed, off)
            print(f"pair {pair} seed {seed} {'off' if off else 'on '}: {results[off].describe()}", flush=True)
        on, off = results[False], results[True]
        fps_ratio = compare_sf2.ratio(on.fps, off.fps)
        wall_ratio = compare_sf2.ratio(off.wall_s, on.wall_s)  # > 1: the run with the private paths is quicker
        fps_ratios.append(fps_ratio)
        wall_ratios.append(wall_ratio)
        figures = {
            "module": args.module,
            "seed": seed,
            "order": "on, off" if order[0] is False else "off, on",
            "on": {"fps": on.fps, "wall_s": round(on.wall_s, 2), "steps": on.steps, "status": on.status},
            "off": {"fps": off.fps, "wall_s": round(off.wall_s, 2), "steps": off.steps, "status": off.status},
            "fps_ratio": fps_ratio,
            "wall_ratio": wall_ratio,
        }
        new_records.append(records.make_record("fast_path_ab", set_id, command, args.workload, figures))
    measured = [r for r in fps_ratios if r is not None]
    walls = [r for r in wall_ratios if r is not None]
    if measured and walls:
        print(
            f"{args.module} on {args.workload}: FPS on/off median {statistics.median(measured):.3f} "
            f"(pairs {', '.join(f'{r:.3f}' for r in measured)}); whole process off/on median "
            f"{statistics.median(walls):.3f}"
        )
    if not args.no_record:
        for path in records.append(new_records, args.results_dir or records.RESULTS_DIR):
            print(f"# records appended to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
