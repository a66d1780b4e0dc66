"""Throughput and learning side by side: this repository against the Sample Factory 2.1.1 release, on one machine.

    python bench/compare_sf2.py cartpole_matched                      # 2 runs of each system, alternating
    python bench/compare_sf2.py --reps=3 doom_basic_matched atari_breakout_matched mujoco_halfcheetah_matched
    python bench/compare_sf2.py --list                                # the workloads and their flags
    make bench                                                        # cartpole_matched, REPS=2
    make bench BENCH="doom_basic_matched mujoco_halfcheetah_matched" REPS=3

Both systems get the same command line: the same example module (``sf_examples.*`` exists in both) with every
hyper-parameter spelled out, so the comparison measures the system rather than the two projects' family defaults.
Runs alternate (ours, reference, ours, reference, ...) so that drift in the machine's speed (other users, thermal
limits) hits both alike. The two runs of a pair get the same ``--seed``, and each pair the next one (1, 2, 3, ...;
``--seed``, ``--fixed_seed``), so that the rewards of several pairs sample several seeds rather than one. Each run
is a process group of its own with a time limit; when it ends, or when this script is stopped, the whole group
(workers included) is ended.

The reference is installed once, from PyPI, into a virtual environment of its own (``--ref_venv``): ``torch``
first, then ``sample-factory==2.1.1 vizdoom``; the MuJoCo workload adds ``mujoco==2.3.7`` (the MuJoCo of its
time) and ``imageio`` (gymnasium 0.29's MuJoCo envs import it), the Atari workload ``ale-py==0.9.1``. ale-py 0.9
ships the Atari ROMs but registers the Atari ids with gymnasium only when imported, which gymnasium 0.29 (the
reference's pin) does not do by itself, so a one-line ``.pth`` file in that venv imports it at start-up. The
reference runs as a separate process from an empty scratch folder, with no ``PYTHONPATH``: its modules and ours
never mix, and nothing of it is imported here.

Per run it prints the env steps and the FPS of the final ``Collected {0: N}, FPS: X`` line each system writes,
the whole process's wall-clock time (start-up and shut-down included, so steps/s is lower than FPS) and the last
``Avg episode reward``; per workload the median ratios ours/reference. On Atari, where an episode ends at a lost life
for the learner in both systems, it also reads the last whole-game score from each run's TensorBoard summaries.
Results also go to ``<scratch>/results.json``, and each pair becomes a ``compare_sf2`` record appended to
``bench/results/compare_sf2.jsonl`` (bench/records.py; ``--no_record`` skips it): the pages of docs/benchmarks.md are
generated from those records.

Exit status: 0 when every run ended with its final FPS line, 1 when some did not, 2 for bad arguments or a failed
install.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import records  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = "sample-factory==2.1.1"
REFERENCE_EXTRAS = {"vizdoom": ("vizdoom",), "mujoco": ("mujoco==2.3.7", "imageio"), "atari": ("ale-py==0.9.1",)}
ALE_PTH = "compare_sf2_ale_py.pth"  # makes every interpreter of the reference venv import ale_py (see above)

_SMALL_MACHINE = ("--device=cpu",)
# PPO on CartPole with a small tanh MLP: the flags of docs/benchmarks.md's cartpole_matched table
CARTPOLE_MATCHED = (
    "--env=CartPole-v1", "--num_workers=2", "--num_envs_per_worker=8", "--train_for_env_steps=200000",
    *_SMALL_MACHINE, "--encoder_mlp_layers", "64", "64", "--nonlinearity=tanh", "--use_rnn=False", "--rollout=32",
    "--gamma=0.99", "--learning_rate=0.001", "--num_epochs=4", "--batch_size=256", "--num_batches_per_epoch=4",
    "--normalize_input=True", "--reward_scale=0.1", "--normalize_returns=True",
)  # fmt: skip
DOOM_BASIC_MATCHED = (
    "--env=doom_basic", "--num_workers=2", "--num_envs_per_worker=4", "--train_for_env_steps=100000",
    *_SMALL_MACHINE, "--env_frameskip=4", "--batch_size=512", "--rollout=32", "--learning_rate=0.0003",
    "--obs_scale=255.0", "--normalize_input=True", "--exploration_loss=symmetric_kl", "--exploration_loss_coeff=0.001",
    "--ppo_clip_value=0.2", "--normalize_returns=True", "--use_rnn=True", "--rnn_type=gru",
    "--encoder_conv_architecture=convnet_simple",
)  # fmt: skip
# Sample Factory 2's Atari family defaults spelled out, on 2 workers of 4 envs (the family's are 8 x 1)
ATARI_BREAKOUT_MATCHED = (
    "--env=atari_breakout", "--num_workers=2", "--num_envs_per_worker=4", "--worker_num_splits=2",
    "--train_for_env_steps=100000", *_SMALL_MACHINE, "--batched_sampling=False", "--serial_mode=False",
    "--async_rl=False", "--env_frameskip=4", "--env_framestack=4", "--summaries_use_frameskip=True",
    "--use_record_episode_statistics=True", "--encoder_conv_architecture=convnet_atari", "--obs_scale=255.0",
    "--nonlinearity=relu", "--use_rnn=False", "--recurrence=1", "--rollout=128", "--batch_size=256",
    "--num_epochs=4", "--num_batches_per_epoch=4", "--shuffle_minibatches=False", "--learning_rate=0.00025",
    "--lr_schedule=constant", "--adam_eps=1e-05", "--max_grad_norm=0.5", "--ppo_clip_ratio=0.1",
    "--value_loss_coeff=0.5", "--exploration_loss=entropy", "--exploration_loss_coeff=0.01", "--kl_loss_coeff=0.0",
    "--gamma=0.99", "--gae_lambda=0.95", "--with_vtrace=False", "--reward_scale=1.0", "--normalize_input=True",
    "--normalize_returns=True",
)  # fmt: skip
# Sample Factory 2's MuJoCo family defaults spelled out, on 2 workers of 8 envs (the family's are 8 x 8)
MUJOCO_HALFCHEETAH_MATCHED = (
    "--env=mujoco_halfcheetah", "--num_workers=2", "--num_envs_per_worker=8", "--worker_num_splits=2",
    "--train_for_env_steps=200000", *_SMALL_MACHINE, "--batched_sampling=False", "--serial_mode=False",
    "--async_rl=False", "--env_frameskip=1", "--encoder_mlp_layers", "64", "64", "--nonlinearity=tanh",
    "--use_rnn=False", "--recurrence=1", "--adaptive_stddev=False", "--policy_initialization=torch_default",
    "--rollout=64", "--batch_size=1024", "--num_epochs=2", "--num_batches_per_epoch=4", "--shuffle_minibatches=False",
    "--learning_rate=0.00295", "--lr_schedule=constant", "--max_grad_norm=3.5", "--ppo_clip_ratio=0.2",
    "--value_loss_coeff=1.3", "--exploration_loss_coeff=0.0", "--kl_loss_coeff=0.1", "--gamma=0.99",
    "--gae_lambda=0.95", "--with_vtrace=False", "--value_bootstrap=True", "--reward_scale=1", "--normalize_input=True",
    "--normalize_returns=True",
)  # fmt: skip


@dataclass(frozen=True)
class Workload:
    module: str  # the example module both systems run with ``python -m``
    flags: tuple[str, ...]
    extra: str  # what the reference venv needs besides the package (a key of REFERENCE_EXTRAS)
    # TensorBoard tags (ours, the reference's) of a whole-game score where the reported episode is shorter: Atari
    # episodes end at a lost life for the learner, so "Avg episode reward" is the score of one life in both systems
    score_tags: tuple[str, str] | None = None


# the raw score of a whole Atari game (every life): our GameStatsWrapper's, and gymnasium's RecordEpisodeStatistics'
ATARI_GAME_SCORE_TAGS = ("policy_stats/avg_game_score", "policy_stats/avg_RecordEpisodeStatistics_reward")


WORKLOADS = {
    "cartpole_matched": Workload("sf_examples.train_gym_env", CARTPOLE_MATCHED, "vizdoom"),
    "doom_basic_matched": Workload("sf_examples.vizdoom.train_vizdoom", DOOM_BASIC_MATCHED, "vizdoom"),
    "atari_breakout_matched": Workload(
        "sf_examples.atari.train_atari", ATARI_BREAKOUT_MATCHED, "atari", score_tags=ATARI_GAME_SCORE_TAGS
    ),
    "mujoco_halfcheetah_matched": Workload("sf_examples.mujoco.train_mujoco", MUJOCO_HALFCHEETAH_MATCHED, "mujoco"),
}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_COLLECTED = re.compile(r"Collected \{0: (\d+)\}, FPS: ([0-9.]+)")
_REWARD = re.compile(r"Avg episode reward: \[\(0, '(-?[0-9.]+)'\)")


@dataclass
class RunResult:
    label: str
    steps: int  # from the final "Collected {0: N}, FPS: X" line; 0 when the run did not write it
    fps: float
    wall_s: float
    reward: float  # the last "Avg episode reward"; nan when none was written
    status: str  # "ok", "time limit", "exit N", "no FPS line"
    score: float = math.nan  # the last whole-game score of the run's summaries (Workload.score_tags); nan: none

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s > 0 else 0.0

    def describe(self) -> str:
        return (
            f"{self.steps} steps, FPS {self.fps:.1f}, {self.wall_s:.1f} s, {self.steps_per_s:.1f} steps/s, "
            f"reward {self.reward:.3f}"
            + ("" if math.isnan(self.score) else f", game score {self.score:.3f}")
            + ("" if self.status == "ok" else f" [{self.status}]")
        )


def parse_log(text: str) -> tuple[int, float, float]:
    """(env steps, FPS) of the last ``Collected`` line (0, 0.0 without one) and the last average reward (nan)."""
    text = _ANSI.sub("", text)
    collected = _COLLECTED.findall(text)
    rewards = _REWARD.findall(text)
    steps, fps = (int(collected[-1][0]), float(collected[-1][1])) if collected else (0, 0.0)
    return steps, fps, float(rewards[-1]) if rewards else math.nan


def last_scalar(summary_folder: str, tag: str) -> float:
    """The last value of ``tag`` in a policy's TensorBoard folder (nan when it has none, or no folder)."""
    from sample_factory.utils.plot import read_scalars

    points = read_scalars(summary_folder).get(tag, []) if os.path.isdir(summary_folder) else []
    return float(points[-1][1]) if points else math.nan


def ratio(ours: float, reference: float) -> float | None:
    """ours / reference, or None when either side measured nothing."""
    return ours / reference if ours > 0 and reference > 0 else None


@dataclass
class Pair:
    rep: int
    ours: RunResult
    reference: RunResult
    seed: int = 1  # the --seed both runs got

    def fps_ratio(self) -> float | None:
        return ratio(self.ours.fps, self.reference.fps)

    def steps_per_s_ratio(self) -> float | None:
        return ratio(self.ours.steps_per_s, self.reference.steps_per_s)


def _median(values: Sequence[float | None]) -> float | None:
    measured = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(measured) if measured else None


@dataclass
class WorkloadSummary:
    name: str
    pairs: list[Pair] = field(default_factory=list)

    def medians(self) -> dict[str, float | None]:
        """Medians over the repetitions: each system's figures (runs that measured nothing left out) and the ratios."""
        ours = [p.ours for p in self.pairs if p.ours.steps > 0]
        ref = [p.reference for p in self.pairs if p.reference.steps > 0]
        return {
            "ours_fps": _median([r.fps for r in ours]),
            "ref_fps": _median([r.fps for r in ref]),
            "ours_steps_per_s": _median([r.steps_per_s for r in ours]),
            "ref_steps_per_s": _median([r.steps_per_s for r in ref]),
            "ours_reward": _median([r.reward for r in ours]),
            "ref_reward": _median([r.reward for r in ref]),
            "ours_score": _median([r.score for r in ours]),
            "ref_score": _median([r.score for r in ref]),
            "fps_ratio": _median([p.fps_ratio() for p in self.pairs]),
            "steps_per_s_ratio": _median([p.steps_per_s_ratio() for p in self.pairs]),
        }

    def table(self) -> str:
        """The median figures as a Markdown table (the layout of docs/benchmarks.md)."""
        medians = self.medians()
        m = {key: "n/a" if value is None else f"{value:.2f}" for key, value in medians.items()}
        score_row = [f"| final whole-game score | {m['ours_score']} | {m['ref_score']} | |"]
        has_score = medians["ours_score"] is not None or medians["ref_score"] is not None
        return "\n".join(
            [
                f"{self.name} (median of {len(self.pairs)} runs each)",
                "| | this repository | Sample Factory 2.1.1 | ratio |",
                "| --- | --- | --- | --- |",
                f"| reported FPS | {m['ours_fps']} | {m['ref_fps']} | {m['fps_ratio']} |",
                f"| whole-process steps/s | {m['ours_steps_per_s']} | {m['ref_steps_per_s']} | "
                f"{m['steps_per_s_ratio']} |",
                f"| final average reward | {m['ours_reward']} | {m['ref_reward']} | |",
            ]
            + (score_row if has_score else [])
        )


class RunGroup:
    """The one training run in flight, as a process group that can be ended whole (time limit, Ctrl-C)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def start(self, command: list[str], cwd: str, env: dict[str, str], log_file) -> subprocess.Popen:
        self.process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
        return self.process

    def end(self, grace_s: float = 5.0) -> None:
        """SIGTERM to the group (the runner saves and stops its workers), SIGKILL to whatever is left."""
        if self.process is None:
            return
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        self.reap()

    def reap(self) -> None:
        """SIGKILL to the group: workers that outlived their runner are still in it."""
        if self.process is not None:
            self._signal(signal.SIGKILL)
            self.process.wait()
            self.process = None

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass


CURRENT_RUN = RunGroup()


def _stop_on_signal(signum: int, frame: object) -> None:
    del frame
    CURRENT_RUN.end()
    sys.exit(128 + signum)


def run_one(
    label: str,
    command: list[str],
    cwd: str,
    env: dict[str, str],
    scratch: str,
    limit_s: float,
    score_tag: str | None = None,
) -> RunResult:
    """Run ``command`` to its end or its time limit; parse its log (``<scratch>/<label>.log``) and, with
    ``score_tag``, read that score's last value from the run's summaries (policy 0)."""
    log_path = os.path.join(scratch, f"{label}.log")
    started = time.monotonic()
    with open(log_path, "w") as log_file:
        process = CURRENT_RUN.start(command, cwd, env, log_file)
        try:
            returncode = process.wait(timeout=limit_s)
            status = "ok" if returncode == 0 else f"exit {returncode}"
            CURRENT_RUN.reap()
        except subprocess.TimeoutExpired:
            status = "time limit"
            CURRENT_RUN.end()
    wall_s = time.monotonic() - started
    with open(log_path, errors="replace") as f:
        steps, fps, reward = parse_log(f.read())
    if status == "ok" and steps == 0:
        status = "no FPS line"
    score = math.nan
    if score_tag is not None:
        score = last_scalar(os.path.join(scratch, "train_dir", label, ".summary", "0"), score_tag)
    return RunResult(label, steps, fps, wall_s, reward, status, score)


def training_command(python: str, workload: Workload, scratch: str, label: str, seed: int = 1) -> list[str]:
    return [
        python, "-m", workload.module, *workload.flags, f"--seed={seed}",
        f"--train_dir={os.path.join(scratch, 'train_dir')}", f"--experiment={label}", "--restart_behavior=overwrite",
    ]  # fmt: skip


def rep_seed(args: argparse.Namespace, rep: int) -> int:
    """The seed both systems get in repetition ``rep``: ``--seed`` plus ``rep``, or ``--seed`` in every pair with
    ``--fixed_seed``. With one seed for every pair the repetitions share their initial weights and env seeds, so their
    rewards are not independent samples: a seed whose curve happens to dip makes every run of one system look behind.
    """
    return args.seed if args.fixed_seed else args.seed + rep


def child_env(pythonpath: str | None) -> dict[str, str]:
    """The environment of a run: ours gets this repository on its path, the reference no PYTHONPATH at all."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def _pip(venv: str, *requirements: str) -> None:
    print(f"# pip install {' '.join(requirements)} into {venv}", flush=True)
    subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", *requirements], check=True)


def _installed(python: str, *requirements: str) -> bool:
    """Whether the interpreter has these distributions, at the pinned version where a requirement pins one (asked
    through package metadata: nothing of them is imported)."""
    names = [r.split("==")[0] for r in requirements]
    probe = "import importlib.metadata as m, sys; print(' '.join(m.version(d) for d in sys.argv[1:]))"
    result = subprocess.run([python, "-c", probe, *names], capture_output=True, text=True)
    if result.returncode != 0:
        return False
    found = result.stdout.split()
    return all("==" not in r or v.split("+")[0] == r.split("==")[1] for r, v in zip(requirements, found, strict=True))


def _site_packages(python: str) -> str:
    probe = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()


def ensure_reference(venv: str, torch_requirement: str, extras: set[str]) -> str:
    """Create and fill the reference venv where something is missing; return its interpreter."""
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        print(f"# creating the reference venv {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    if not _installed(python, "torch"):
        _pip(venv, torch_requirement)
    if not _installed(python, REFERENCE):
        _pip(venv, REFERENCE)
    for extra in sorted(extras):
        requirements = REFERENCE_EXTRAS[extra]
        if not _installed(python, *requirements):
            _pip(venv, *requirements)
    if "atari" in extras:
        with open(os.path.join(_site_packages(python), ALE_PTH), "w") as f:
            f.write("import ale_py\n")
    return python


def machine_description() -> str:
    """CPU model, cores and the load average: the context every figure of a comparison needs."""
    model = "unknown CPU"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        model = names[0] if names else model
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{model}, {os.cpu_count()} logical cores, load average {load}"


def default_ours_python() -> str:
    venv_python = os.path.join(REPO_ROOT, ".venv", "bin", "python")
    return venv_python if os.path.exists(venv_python) else sys.executable


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("workloads", nargs="*", default=["cartpole_matched"], help=f"any of {', '.join(WORKLOADS)}")
    parser.add_argument("--reps", type=int, default=os.environ.get("REPS", "2"), help="runs of each system")
    parser.add_argument("--time_limit", type=float, default=1200.0, help="seconds one run may take")
    parser.add_argument("--ours_python", default=default_ours_python(), help="interpreter of this repository")
    parser.add_argument("--ref_venv", default="/tmp/sf2ref-venv", help="the reference's venv (installed when missing)")
    parser.add_argument("--ref_python", default=None, help="a ready reference interpreter: no install")
    parser.add_argument("--torch", default="torch==2.13.0", help="torch requirement of the reference venv")
    parser.add_argument("--scratch", default="/tmp/sf2-compare", help="logs, train_dir and results.json")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first pair; pair i gets seed + i")
    parser.add_argument("--fixed_seed", action="store_true", help="give every pair --seed (FPS-only comparisons)")
    parser.add_argument("--list", action="store_true", help="print the workloads and their flags, then exit")
    parser.add_argument("--results_dir", default=None, help="where the records go (default: bench/results)")
    parser.add_argument("--no_record", action="store_true", help="write no record (results.json is still written)")
    args = parser.parse_args(argv)
    unknown = [w for w in args.workloads if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}: choose from {', '.join(WORKLOADS)}")
    if args.reps < 1:
        parser.error(f"--reps={args.reps}: at least 1 run of each system is needed")
    if args.time_limit <= 0:
        parser.error(f"--time_limit={args.time_limit}: must be positive (seconds)")
    return args


def compare(name: str, args: argparse.Namespace, ref_python: str) -> WorkloadSummary:
    """``args.reps`` pairs of runs, ours first in each pair; one line per pair as it finishes."""
    workload, summary = WORKLOADS[name], WorkloadSummary(name)
    ours_tag, ref_tag = workload.score_tags or (None, None)
    scratch = os.path.abspath(args.scratch)
    empty_dir = os.path.join(scratch, "reference_cwd")  # nothing of this repository on the reference's path
    os.makedirs(empty_dir, exist_ok=True)
    for rep in range(args.reps):
        ours_label, ref_label = f"ours_{name}_{rep}", f"ref_{name}_{rep}"
        seed = rep_seed(args, rep)
        ours_cmd = training_command(args.ours_python, workload, scratch, ours_label, seed)
        ours = run_one(ours_label, ours_cmd, REPO_ROOT, child_env(REPO_ROOT), scratch, args.time_limit, ours_tag)
        ref_cmd = training_command(ref_python, workload, scratch, ref_label, seed)
        ref = run_one(ref_label, ref_cmd, empty_dir, child_env(None), scratch, args.time_limit, ref_tag)
        pair = Pair(rep, ours, ref, seed)
        summary.pairs.append(pair)
        print(f"{name} run {rep} (--seed={seed})", flush=True)
        print(f"  ours:      {ours.describe()}\n  reference: {ref.describe()}", flush=True)
        print(f"  ratio ours/reference: FPS {_fmt(pair.fps_ratio())}, steps/s {_fmt(pair.steps_per_s_ratio())}")
    return summary


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def write_results(path: str, machines: tuple[str, str], summaries: list[WorkloadSummary]) -> None:
    """Every run and the medians, for the record (``machines``: at the start and at the end)."""
    results = {
        "machine_at_start": machines[0],
        "machine_at_end": machines[1],
        "workloads": {
            s.name: {
                "command": f"python -m {WORKLOADS[s.name].module} {' '.join(WORKLOADS[s.name].flags)}",
                "seeds": [p.seed for p in s.pairs],
                "medians": s.medians(),
                "runs": [{"ours": asdict(p.ours), "reference": asdict(p.reference)} for p in s.pairs],
            }
            for s in summaries
        },
    }
    with open(path, "w") as f:
        json.dump(results, f, indent=2)


def pair_records(
    summaries: list[WorkloadSummary], command: str, set_id: str, reference_versions: dict[str, str]
) -> list[dict]:
    """One ``compare_sf2`` record per pair of runs: both systems' figures and the pair's ratios."""
    out = []
    for summary in summaries:
        for pair in summary.pairs:
            sides = {}
            for side, run in (("ours", pair.ours), ("reference", pair.reference)):
                sides[side] = {
                    "steps": run.steps,
                    "fps": run.fps,
                    "wall_s": round(run.wall_s, 2),
                    "reward": None if math.isnan(run.reward) else run.reward,
                    "score": None if math.isnan(run.score) else run.score,
                    "status": run.status,
                }
            figures = {
                "pair": pair.rep,
                "seed": pair.seed,
                **sides,
                "fps_ratio": pair.fps_ratio(),
                "steps_per_s_ratio": pair.steps_per_s_ratio(),
            }
            workload = WORKLOADS[summary.name]
            out.append(
                records.make_record(
                    "compare_sf2",
                    set_id,
                    command,
                    summary.name,
                    figures,
                    workload_command=f"python -m {workload.module} {' '.join(workload.flags)} --seed={pair.seed}",
                    reference_versions=reference_versions,
                )
            )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, workload in WORKLOADS.items():
            print(f"{name}: python -m {workload.module} {' '.join(workload.flags)} --seed=<seed of the pair>")
        return 0
    os.makedirs(args.scratch, exist_ok=True)
    ref_python = args.ref_python
    if ref_python is None:
        extras = {WORKLOADS[w].extra for w in args.workloads}
        try:
            ref_python = ensure_reference(args.ref_venv, args.torch, extras)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"could not install the reference into {args.ref_venv}: {exc}", file=sys.stderr)
            return 2
    signal.signal(signal.SIGINT, _stop_on_signal)
    signal.signal(signal.SIGTERM, _stop_on_signal)
    machine_before = machine_description()
    print(f"# machine: {machine_before}", flush=True)
    summaries = [compare(name, args, ref_python) for name in args.workloads]
    machine_after = machine_description()
    print(f"\n# machine at the start: {machine_before}\n# machine at the end:   {machine_after}\n")
    print("\n\n".join(s.table() for s in summaries))
    write_results(os.path.join(args.scratch, "results.json"), (machine_before, machine_after), summaries)
    if not args.no_record:
        command = "python bench/compare_sf2.py " + " ".join(argv if argv is not None else sys.argv[1:])
        made = pair_records(summaries, command, records.new_set_id("compare_sf2"), records.versions(ref_python))
        results_dir = records.RESULTS_DIR if args.results_dir is None else Path(args.results_dir)
        for path in records.append(made, results_dir):
            print(f"# records appended to {path}")
    complete = all(r.status == "ok" for s in summaries for p in s.pairs for r in (p.ours, p.reference))
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
