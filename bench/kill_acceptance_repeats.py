"""Repeat the fault-tolerance acceptance run and report how each one ends: final and lowest late average reward.

One round is a kill run and a plain run of the same command (CartPole-v1, 400k steps, 2 workers x 8 envs, seed 1,
``--decorrelate_experience_max_seconds=0``), alternated so both see the same machine. In a kill run, ``--kill``
picks the victims: ``workers`` SIGKILLs ``rollout_w1`` at 30 % of the steps and ``inference_p0_w0`` at 60 % (the
slow test's schedule on a fast machine), ``learner`` SIGKILLs ``learner_p0`` at 40 % (add ``--save_every_sec=5``
so it has a recent checkpoint to resume from). Extra arguments after ``--`` go to every run, e.g.
``-- --value_bootstrap=False`` to reproduce the late reward dips of docs/reliability.md.

Printed per run: exit code, the last ``Avg episode reward`` and the lowest one over the second half of the run's
status lines. Not a test (a round takes about a minute on 2 idle cores):

    python bench/kill_acceptance_repeats.py --rounds=8 --kill=workers -- --value_bootstrap=False
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile

from sample_factory.utils.processes import pid_by_title

REWARD_RE = re.compile(r"Avg episode reward: \[\(0, '(-?[0-9.naif]+)'\)")
FRAMES_RE = re.compile(r"Total num frames: (\d+)")
STEPS = 400_000
KILL_SCHEDULES = {
    "workers": [(0.3, "rollout_w1"), (0.6, "inference_p0_w0")],
    "learner": [(0.4, "learner_p0")],
}


def run_once(train_dir: str, experiment: str, kills: list[tuple[float, str]], extra: list[str]) -> dict:
    """One training run; SIGKILLs each ``(share, title)`` once the status lines report ``share`` of the steps."""
    cmd = [
        sys.executable, "-m", "sf_examples.train_gym_env", "--env=CartPole-v1", "--device=cpu", "--num_workers=2",
        "--num_envs_per_worker=8", f"--train_for_env_steps={STEPS}", "--seed=1", f"--train_dir={train_dir}",
        f"--experiment={experiment}", "--decorrelate_experience_max_seconds=0", *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    pending, output = list(kills), []
    assert proc.stdout is not None
    for line in proc.stdout:
        output.append(line)
        frames = FRAMES_RE.search(line)
        if frames and pending and int(frames.group(1)) >= pending[0][0] * STEPS:
            os.kill(pid_by_title(proc.pid, pending.pop(0)[1]), signal.SIGKILL)
    proc.wait()
    rewards = [float(r) for r in REWARD_RE.findall("".join(output))]
    return dict(
        returncode=proc.returncode,
        final=rewards[-1] if rewards else None,
        lowest_late=min(rewards[len(rewards) // 2 :]) if rewards else None,
        kills_left=len(pending),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4, help="kill runs (each followed by a plain run)")
    parser.add_argument("--kill", choices=sorted(KILL_SCHEDULES), default="workers")
    parser.add_argument("--train_dir", default=None, help="default: a temporary folder, removed at the end")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    with tempfile.TemporaryDirectory() as scratch:
        train_dir = args.train_dir or scratch
        for round_idx in range(args.rounds):
            for kills in (KILL_SCHEDULES[args.kill], []):
                kind = f"kill_{args.kill}" if kills else "plain"
                result = run_once(train_dir, f"{kind}_{round_idx}", kills, extra + ["--restart_behavior=overwrite"])
                missed = f"  ({result['kills_left']} kills not done: the run ended first)"
                print(
                    f"round {round_idx} {kind:13s} exit {result['returncode']}  final {result['final']}  "
                    f"lowest in the second half {result['lowest_late']}{missed if result['kills_left'] else ''}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
