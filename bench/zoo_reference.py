"""Train a zoo task with the Sample Factory 2.1.1 release, same machine, seed and budget schedule, and keep its curve.

    python bench/zoo_reference.py mujoco_reacher --seed=1 --stop_at=3000000

Where a zoo score falls short of the published one, this tells whether the release itself gets there on this machine:
it runs ``python -m <the family's train module> --env=<task> --seed=<seed> --train_for_env_steps=<budget>`` from the
release (installed into its own venv by bench/compare_sf2.py; run from a scratch folder so that this repository is not
imported), with the budget the zoo trains to, so schedules that depend on it (``linear_decay``) are those of the zoo's
run. ``--stop_at`` ends it early: at that many env steps the whole process group is stopped. The curve is read from
the console's summaries (``Total num frames``, ``Avg episode reward``) and one ``zoo_reference`` record is appended
to ``bench/results/zoo_reference.jsonl``; docs/zoo.md sets it against the zoo run of the same task and seed over the
same steps. Then the release's own enjoy script (``sf_examples.<family>.enjoy_<family> --no_render
--max_num_episodes=10``) plays its best and its latest checkpoint, as the zoo evaluates its own runs, and the record
keeps those scores too (``best_checkpoint_score_mean``; ``score_mean``, ``score_std``, ``episodes`` of the final
policy; ``--episodes=0`` skips them). ``--eval_only`` evaluates a run
already trained in ``--train_dir`` and appends a record with the curve of its log.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare_sf2  # noqa: E402
import records  # noqa: E402
from zoo_tasks import TASKS, ZooTask  # noqa: E402

OURS_ONLY_FLAGS = ("--mujoco_version=",)  # flags of the zoo's commands that the release does not have
FAMILY_EXTRAS = {"mujoco": {"mujoco"}, "vizdoom": {"vizdoom"}, "atari": {"atari"}}
FRAMES = re.compile(r"Total num frames: (\d+)")
REWARD = re.compile(r"Avg episode reward: \[\(0, '(-?[\d.]+(?:e[-+]?\d+)?)'\)\]")
EVAL_AVERAGE = re.compile(r"Avg episode reward: (-?[\d.]+(?:e[-+]?\d+)?), avg true_objective")
SHM = Path("/dev/shm")
POLL_S = 5.0
CURVE_POINTS = 150


def family(task: ZooTask) -> str:
    return task.train_module.split(".")[1]  # sf_examples.<family>.train_<family>


def reference_command(python: str, task: ZooTask, train_dir: str, experiment: str, seed: int) -> list[str]:
    flags = [f for f in task.extra_flags if not f.startswith(OURS_ONLY_FLAGS)]
    return [
        python, "-m", task.train_module, f"--env={task.env}", f"--experiment={experiment}", f"--train_dir={train_dir}",
        f"--train_for_env_steps={task.budget}", f"--seed={seed}", "--device=cpu", "--restart_behavior=overwrite",
        *flags,
    ]  # fmt: skip


def enjoy_command(
    python: str, task: ZooTask, train_dir: str, experiment: str, episodes: int, kind: str = "latest"
) -> list[str]:
    module = task.train_module.replace(".train_", ".enjoy_")  # sf_examples.<family>.enjoy_<family>
    return [
        python, "-m", module, f"--env={task.env}", f"--experiment={experiment}", f"--train_dir={train_dir}",
        "--no_render", f"--max_num_episodes={episodes}", "--device=cpu", f"--load_checkpoint_kind={kind}",
    ]  # fmt: skip


def parse_eval_rewards(log_text: str) -> list[float]:
    """The episode rewards of an enjoy script's log. It prints the running mean after each finished episode, so the
    k-th episode's reward is k * mean_k - (k - 1) * mean_(k-1) (to the printed precision)."""
    rewards: list[float] = []
    previous = 0.0
    for match in EVAL_AVERAGE.finditer(log_text):
        mean = float(match.group(1))
        k = len(rewards) + 1
        rewards.append(round(k * mean - (k - 1) * previous, 3))
        previous = mean
    return rewards


def evaluate_reference(command: list[str], log_path: Path) -> list[float]:
    """Play a checkpoint of the release's run with its enjoy script (from a scratch folder); the episode rewards.

    The release's checkpoints hold numpy scalars, which torch >= 2.6 refuses to unpickle by default (weights-only
    loading), so the script runs with torch's ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD``: the file is the one the release
    has just written here."""
    env = {**os.environ, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    with tempfile.TemporaryDirectory(prefix="zoo_reference_eval_") as scratch, open(log_path, "w") as log:
        subprocess.run(command, cwd=scratch, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    return parse_eval_rewards(log_path.read_text(errors="replace"))


def evaluate_both(python: str, task: ZooTask, train_dir: str, experiment: str, episodes: int) -> dict[str, float]:
    """The release's final policy (``score_mean``, ``score_std``, ``episodes``) and its best-scoring checkpoint
    (``best_checkpoint_score_mean``), each over ``episodes`` episodes, as the zoo evaluates its own runs."""
    figures: dict[str, float] = {}
    for kind in ("best", "latest"):
        command = enjoy_command(python, task, train_dir, experiment, episodes, kind)
        print("# " + " ".join(command), flush=True)
        log_name = f"{experiment}_eval_{kind}.log"
        rewards = evaluate_reference(command, Path(train_dir) / log_name)
        if not rewards:
            print(f"# the release's enjoy script printed no episode rewards: see {log_name}", flush=True)
        elif kind == "best":
            figures["best_checkpoint_score_mean"] = statistics.fmean(rewards)
        else:
            figures.update(episodes=len(rewards), score_mean=statistics.fmean(rewards),
                           score_std=statistics.pstdev(rewards))  # fmt: skip
    return figures


def parse_curve(log_text: str) -> list[tuple[int, float]]:
    """[(env steps, average episode reward)] from a Sample Factory console log: each reward line belongs to the
    frame count printed before it."""
    curve: list[tuple[int, float]] = []
    frames = None
    for line in log_text.splitlines():
        if match := FRAMES.search(line):
            frames = int(match.group(1))
        elif (match := REWARD.search(line)) and frames is not None:
            curve.append((frames, float(match.group(1))))
    return curve


def thin(curve: list[tuple[int, float]], points: int = CURVE_POINTS) -> list[tuple[int, float]]:
    """At most ``points`` evenly spaced points, the first and the last kept."""
    if len(curve) <= points:
        return curve
    stride = (len(curve) - 1) / (points - 1)
    return [curve[round(i * stride)] for i in range(points)]


def _group_pids(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state ppid pgrp
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            pids.append(int(entry.name))
    return pids


def _mapped_shm() -> set[str]:
    """Names of the /dev/shm files some live process maps (the release's semaphores and torch tensors are mapped)."""
    names = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text()
        except OSError:
            continue
        names.update(m.group(1) for m in re.finditer(r"/dev/shm/(\S+)", text))
    return names


def stop_group(process: subprocess.Popen, grace_s: float = 30.0) -> None:
    """SIGINT to the run's process group (the release stops in order on Ctrl+C), SIGKILL to what is left after."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while process.poll() is None or _group_pids(process.pid):
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if process.poll() is not None and not _group_pids(process.pid):
            break
    process.wait()


def remove_leftover_shm(before: set[str]) -> list[str]:
    """Delete the /dev/shm files that appeared during the run and that no live process maps any more."""
    if not SHM.is_dir():
        return []
    mapped, removed = _mapped_shm(), []
    for path in SHM.iterdir():
        if path.name not in before and path.name not in mapped and path.is_file():
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return removed


def run_reference(command: list[str], log_path: Path, stop_at: int) -> tuple[list[tuple[int, float]], float]:
    """Run the release until it ends or reaches ``stop_at`` env steps; its curve and wall seconds."""
    before = {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="zoo_reference_") as scratch, open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=scratch, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            while process.poll() is None:
                time.sleep(POLL_S)
                curve = parse_curve(log_path.read_text(errors="replace"))
                if curve and curve[-1][0] >= stop_at:
                    break
        finally:
            stop_group(process)
    removed = remove_leftover_shm(before)
    if removed:
        print(f"# removed {len(removed)} files the stopped run left in /dev/shm", flush=True)
    return parse_curve(log_path.read_text(errors="replace")), time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--stop_at", type=int, default=None, help="env steps to stop at (default: the budget)")
    parser.add_argument("--ref_venv", default="/tmp/sf2ref-venv", help="the release's venv (installed when missing)")
    parser.add_argument("--torch", default="torch==2.13.0", help="torch requirement of the release's venv")
    parser.add_argument("--train_dir", default="/tmp/zoo_reference_runs")
    parser.add_argument("--episodes", type=int, default=10, help="evaluation episodes after training (0: none)")
    parser.add_argument("--results_dir", default=str(records.RESULTS_DIR), help="where the record goes")
    parser.add_argument(
        "--eval_only",
        action="store_true",
        help="train nothing: evaluate the run already in --train_dir, its curve read from its log",
    )
    args = parser.parse_args(argv)
    task = TASKS[args.task]
    stop_at = args.stop_at or task.budget
    python = compare_sf2.ensure_reference(args.ref_venv, args.torch, FAMILY_EXTRAS.get(family(task), set()))
    experiment = f"sf2_{args.task}_s{args.seed}"
    Path(args.train_dir).mkdir(parents=True, exist_ok=True)
    command = reference_command(python, task, args.train_dir, experiment, args.seed)
    log_path = Path(args.train_dir) / f"{experiment}.log"
    if args.eval_only:
        curve, wall_s = parse_curve(log_path.read_text(errors="replace")) if log_path.is_file() else [], None
    else:
        print("# " + " ".join(command), flush=True)
        curve, wall_s = run_reference(command, log_path, stop_at)
    if not curve:
        print(f"the release printed no summaries: see {log_path}", file=sys.stderr)
        return 1
    figures = {
        "seed": args.seed,
        "budget": task.budget,
        "stop_at": stop_at,
        "env_steps": curve[-1][0],
        "wall_s": None if wall_s is None else round(wall_s, 1),
        "curve": [[steps, round(reward, 4)] for steps, reward in thin(curve)],
    }
    if args.episodes > 0:
        figures.update(evaluate_both(python, task, args.train_dir, experiment, args.episodes))
    record = records.make_record(
        "zoo_reference", records.new_set_id("zoo_reference"), " ".join(command), args.task, figures,
        reference_versions=records.versions(python),
    )  # fmt: skip
    for path in records.append([record], Path(args.results_dir)):
        print(f"# record appended to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
