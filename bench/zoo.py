"""Train a zoo task to Sample Factory 2's published budget, evaluate it like SF2's published models, keep a record.

    python bench/zoo.py --list
    python bench/zoo.py mujoco_hopper [--seed=1] [--max_hours=H] [--train_dir=bench/zoo_runs]

Training is ``python -m <family's train module> --env=<task> --train_for_env_steps=<budget>`` with the family's
defaults, resumed where an earlier call stopped (``--restart_behavior=resume``). ``--max_hours`` bounds this call's
training: at the limit (or on Ctrl+C / SIGTERM) the run is stopped in order (a checkpoint is written), and the
record is marked partial. Then the policy is evaluated over 10 episodes (``python -m sample_factory.eval
--max_num_episodes=10``) and one ``zoo`` record is appended to ``bench/results/zoo.jsonl`` (see bench/records.py) with:

- ``score_mean``, ``score_std``: the evaluation's episode rewards of the final policy; ``published_mean``/
  ``published_std``, ``passes``; ``best_checkpoint_score_mean``: the same evaluation of the best-scoring checkpoint
  training saved (``--load_checkpoint_kind=best``; None without one);
- ``env_steps``, ``budget``, ``complete``; ``train_wall_s``: the training time of every call on this experiment;
- ``curve``: up to 60 points ``[env steps, training seconds, average episode reward]`` from the run's summaries;
- ``time_to_90_s`` / ``steps_to_90``: the first point whose reward reached the published score less 10 % of its
  magnitude (None when never reached).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import records  # noqa: E402
from zoo_tasks import TASKS, ZooTask  # noqa: E402

REWARD_TAG = "0_aux/avg_reward"
STATE_FILE = "zoo_state.json"  # beside config.json: the training seconds of every call so far
CURVE_POINTS = 60
PAUSE_S = 600.0  # a gap this long between two summaries is a stop and a resume, not training time


def experiment_name(task: str, seed: int) -> str:
    return f"zoo_{task}_s{seed}"


def train_command(python: str, task: ZooTask, train_dir: str, experiment: str, seed: int, budget: int) -> list[str]:
    return [
        python, "-m", task.train_module, f"--env={task.env}", f"--experiment={experiment}", f"--train_dir={train_dir}",
        f"--train_for_env_steps={budget}", f"--seed={seed}", "--restart_behavior=resume", *task.extra_flags,
    ]  # fmt: skip


def eval_command(
    python: str, task: ZooTask, train_dir: str, experiment: str, episodes: int, kind: str = "latest"
) -> list[str]:
    return [
        python, "-m", "sample_factory.eval", f"--env={task.env}", f"--experiment={experiment}",
        f"--train_dir={train_dir}", f"--max_num_episodes={episodes}", f"--load_checkpoint_kind={kind}",
    ]  # fmt: skip


def evaluate(args: argparse.Namespace, task: ZooTask, experiment: str, kind: str) -> list[float]:
    """The episode rewards of ``args.episodes`` evaluation episodes of the latest or the best checkpoint."""
    experiment_dir = Path(args.train_dir) / experiment
    (experiment_dir / "eval_results.csv").unlink(missing_ok=True)
    subprocess.run(eval_command(args.python, task, args.train_dir, experiment, args.episodes, kind), check=False)
    return read_eval_rewards(experiment_dir)


INTERRUPTED = 2  # the exit code of a training run stopped in order by a signal


def run_training(command: list[str], log_path: Path, max_seconds: float | None) -> tuple[int, float, bool]:
    """(exit code, seconds, stopped before its budget). At the limit, or when this script gets SIGINT/SIGTERM, the run
    gets SIGTERM: it stops in order and writes a checkpoint (SIGTERM, not SIGINT: a run started from a background
    shell inherits an ignored SIGINT)."""
    start = time.monotonic()
    with open(log_path, "a") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def stop_run(signum: int = 0, frame: object = None) -> None:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)

        previous = {sig: signal.signal(sig, stop_run) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            try:
                process.wait(timeout=max_seconds)
            except subprocess.TimeoutExpired:
                stop_run()
            try:
                process.wait(timeout=300)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return process.returncode, time.monotonic() - start, process.returncode == INTERRUPTED


def read_reward_curve(summary_dir: Path) -> list[tuple[int, float, float]]:
    """[(env steps, wall time, average reward)] of a policy's summaries, in step order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    if not summary_dir.is_dir():
        return []
    points: list[tuple[int, float, float]] = []
    for event_file in sorted(summary_dir.glob("events.out.tfevents.*")):
        accumulator = EventAccumulator(str(event_file), size_guidance={"scalars": 0})
        accumulator.Reload()
        if REWARD_TAG in accumulator.Tags().get("scalars", []):
            points.extend((e.step, e.wall_time, e.value) for e in accumulator.Scalars(REWARD_TAG))
    return sorted(points)


def training_seconds(points: list[tuple[int, float, float]]) -> list[tuple[int, float, float]]:
    """Replace wall times by the training time since the first summary, leaving out pauses between calls."""
    curve, elapsed = [], 0.0
    for i, (step, wall, value) in enumerate(points):
        if i:
            gap = wall - points[i - 1][1]
            elapsed += gap if 0 < gap < PAUSE_S else 0.0
        curve.append((step, elapsed, value))
    return curve


def first_reaching(curve: list[tuple[int, float, float]], threshold: float | None) -> tuple[int, float] | None:
    if threshold is None:
        return None
    for step, seconds, value in curve:
        if value >= threshold:
            return step, seconds
    return None


def thin(curve: list[tuple[int, float, float]], points: int = CURVE_POINTS) -> list[list[float]]:
    if len(curve) > points:
        stride = (len(curve) - 1) / (points - 1)
        curve = [curve[round(i * stride)] for i in range(points)]
    return [[step, round(seconds, 1), round(value, 4)] for step, seconds, value in curve]


def read_eval_rewards(experiment_dir: Path) -> list[float]:
    path = experiment_dir / "eval_results.csv"
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return [float(row["reward"]) for row in csv.DictReader(f)]


def load_state(experiment_dir: Path) -> dict[str, Any]:
    path = experiment_dir / STATE_FILE
    return json.loads(path.read_text()) if path.exists() else {"train_wall_s": 0.0, "calls": 0}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", nargs="?", help=f"one of {', '.join(TASKS)}")
    parser.add_argument("--list", action="store_true", help="print the tasks and exit")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max_hours", type=float, default=None, help="train at most this long in this call")
    parser.add_argument("--budget", type=int, default=None, help="env steps instead of the published budget")
    parser.add_argument("--episodes", type=int, default=10, help="evaluation episodes (SF2's models: 10)")
    parser.add_argument("--train_dir", default=str(records.REPO_ROOT / "bench" / "zoo_runs"))
    parser.add_argument("--python", default=sys.executable, help="interpreter that trains and evaluates")
    parser.add_argument("--results_dir", default=str(records.RESULTS_DIR), help="where the record goes")
    parser.add_argument("--no_record", action="store_true", help="print the record, append it nowhere")
    args = parser.parse_args(argv)
    if not args.list and args.task not in TASKS:
        parser.error(f"unknown task {args.task!r}: choose one of {', '.join(TASKS)} (--list shows them)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, task in TASKS.items():
            published = "none" if task.published_mean is None else f"{task.published_mean} +- {task.published_std}"
            why_not = f"; cannot be trained here: {task.unavailable}" if task.unavailable else ""
            print(
                f"{name}: {task.train_module}, budget {task.budget:,}, published {published} ({task.source})" + why_not
            )
        return 0
    task, experiment = TASKS[args.task], experiment_name(args.task, args.seed)
    if task.unavailable:
        print(f"{args.task} cannot be trained here: {task.unavailable}", file=sys.stderr)
        return 2
    budget = args.budget or task.budget
    experiment_dir = Path(args.train_dir) / experiment
    experiment_dir.mkdir(parents=True, exist_ok=True)
    state = load_state(experiment_dir)
    command = train_command(args.python, task, args.train_dir, experiment, args.seed, budget)
    print("# " + " ".join(command), flush=True)
    max_seconds = None if args.max_hours is None else args.max_hours * 3600
    code, seconds, stopped = run_training(command, experiment_dir / "zoo_train.log", max_seconds)
    state = {"train_wall_s": state["train_wall_s"] + seconds, "calls": state["calls"] + 1}
    (experiment_dir / STATE_FILE).write_text(json.dumps(state))
    if code != 0 and not stopped:
        print(f"training exited with {code}: see {experiment_dir / 'zoo_train.log'}", file=sys.stderr)
        return 1
    best_rewards = evaluate(args, task, experiment, "best")  # the best-scoring checkpoint saved during training
    rewards = evaluate(args, task, experiment, "latest")  # the final policy: the record's score
    curve = training_seconds(read_reward_curve(experiment_dir / ".summary" / "0"))
    reached = first_reaching(curve, task.threshold_90())
    env_steps = curve[-1][0] if curve else 0
    score = statistics.fmean(rewards) if rewards else None
    figures = {
        "budget": budget,
        "env_steps": env_steps,
        "complete": not stopped and env_steps >= budget * 0.99,
        "seed": args.seed,
        "episodes": len(rewards),
        "score_mean": score,
        "score_std": statistics.pstdev(rewards) if rewards else None,
        "best_checkpoint_score_mean": statistics.fmean(best_rewards) if best_rewards else None,
        "published_mean": task.published_mean,
        "published_std": task.published_std,
        "passes": None if score is None else task.passes(score),
        "train_wall_s": round(state["train_wall_s"], 1),
        "steps_to_90": reached[0] if reached else None,
        "time_to_90_s": round(reached[1], 1) if reached else None,
        "curve": thin(curve),
    }
    set_id = records.new_set_id("zoo")
    record = records.make_record("zoo", set_id, " ".join(command), args.task, figures, experiment=experiment)
    print(json.dumps({k: v for k, v in figures.items() if k != "curve"}, indent=1))
    if not args.no_record:
        for path in records.append([record], Path(args.results_dir)):
            print(f"# record appended to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
