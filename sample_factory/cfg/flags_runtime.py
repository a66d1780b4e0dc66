"""Flags of the running system: processes and devices, logging and stop conditions, checkpoints, fault tolerance,
and the legacy spellings of renamed flags.
"""

from __future__ import annotations

import argparse

from sample_factory.utils.utils import str2bool

ArgParser = argparse.ArgumentParser

# Flags renamed since the 1.x releases: old dest -> new dest. The old spelling still parses (with a warning).
LEGACY_ALIASES: dict[str, str] = {
    "ppo_epochs": "num_epochs",
    "num_minibatches_to_accumulate": "num_batches_to_accumulate",
}


def add_process_args(p: ArgParser) -> None:
    """Process-level tuning: start-up decorrelation, CPU/GPU placement, threads, timeouts."""
    g = p.add_argument_group("Processes", "CPU/GPU placement, threading and start-up behaviour of the processes.")
    g.add_argument(
        "--decorrelate_experience_max_seconds",
        type=int,
        default=0,
        help="Workers start after a random delay up to this long, so their batches do not arrive in lockstep.",
    )
    g.add_argument(
        "--decorrelate_envs_on_one_worker",
        type=str2bool,
        default=True,
        help="Only with --decorrelate_experience_max_seconds > 0: each split of a worker's envs starts after its own "
        "random delay; False gives one delay per worker. Envs inside one split always start together.",
    )
    g.add_argument(
        "--actor_worker_gpus",
        type=int,
        default=[],
        nargs="*",
        help="Parallel mode: positions (in the list of visible GPUs) that rollout worker processes are spread over, "
        "one GPU each, round-robin; for envs that render or simulate on a GPU. Empty: rollout workers get no "
        "GPU. No effect in serial mode (one process).",
    )
    g.add_argument(
        "--set_workers_cpu_affinity",
        type=str2bool,
        default=True,
        help="Pin each rollout worker process to its own core (parallel mode; rollout workers only). In sync mode "
        "(--async_rl=False) only when typed explicitly: the default leaves them to the scheduler there, which gives "
        "the busy inference worker a core of its own while the learner waits (faster, see docs/architecture.md).",
    )
    g.add_argument(
        "--force_envs_single_thread",
        type=str2bool,
        default=False,
        help="Limit the numpy/BLAS threads of rollout worker processes to one (threadpoolctl), for envs whose "
        "threads oversubscribe the CPUs (parallel mode; rollout workers only).",
    )
    g.add_argument(
        "--default_niceness",
        type=int,
        default=0,
        help="Nice value (priority) added to rollout worker processes (parallel mode; rollout workers only).",
    )
    g.add_argument(
        "--reset_timeout_seconds",
        type=int,
        default=120,
        help="Parallel mode: a rollout worker whose envs do not finish their first reset within this many seconds "
        "ends the run with an error naming it. In serial mode a hung env blocks the only process instead.",
    )
    g.add_argument(
        "--learner_main_loop_num_cores",
        type=int,
        default=1,
        help="Torch CPU threads of the learner process (batch preparation and training); in serial mode, of the "
        "whole process. Raise it when learning on the CPU with spare cores.",
    )
    g.add_argument(
        "--train_in_background_thread",
        type=str2bool,
        default=True,
        help="Parallel mode only: train on a background thread while the learner's main thread prepares the next "
        "batch (serial mode always trains on the one thread).",
    )


def add_logging_args(p: ArgParser) -> None:
    """Logs, summaries, heartbeats and when to stop."""
    g = p.add_argument_group("Logging and stopping", "Log files, TensorBoard summaries, heartbeats, stop conditions.")
    g.add_argument("--log_to_file", type=str2bool, default=True, help="Also write the log to sf_log.txt.")
    g.add_argument(
        "--experiment_summaries_interval", type=int, default=10, help="Seconds between TensorBoard summaries."
    )
    g.add_argument("--flush_summaries_interval", type=int, default=30, help="Seconds between flushes of summaries.")
    g.add_argument("--stats_avg", type=int, default=100, help="Episodes averaged for reported episode statistics.")
    g.add_argument(
        "--summaries_use_frameskip",
        type=str2bool,
        default=True,
        help="Count env frames (steps times frameskip) on the summaries' x axis.",
    )
    g.add_argument(
        "--heartbeat_interval",
        type=int,
        default=20,
        help="How often (seconds) the runner checks heartbeats; it warns about a component silent for twice this "
        "long. Components send a heartbeat every second whatever this is.",
    )
    g.add_argument(
        "--heartbeat_reporting_interval",
        type=int,
        default=180,
        help="Report a component by name when it has not sent a heartbeat for this many seconds.",
    )
    g.add_argument("--train_for_env_steps", type=int, default=int(1e10), help="Stop after this many env steps.")
    g.add_argument("--train_for_seconds", type=int, default=int(1e10), help="Stop after this many seconds.")
    g.add_argument(
        "--benchmark", type=str2bool, default=False, help="Measure throughput for a fixed number of steps, then stop."
    )


def add_checkpoint_args(p: ArgParser) -> None:
    """When checkpoints are written, how many are kept and which one is loaded."""
    g = p.add_argument_group("Checkpoints", "Checkpoint frequency, retention and selection.")
    g.add_argument("--save_every_sec", type=int, default=120, help="Seconds between regular checkpoints.")
    g.add_argument("--keep_checkpoints", type=int, default=2, help="Number of latest checkpoints kept on disk.")
    g.add_argument(
        "--load_checkpoint_kind",
        type=str,
        default="latest",
        choices=["latest", "best"],
        help="Which checkpoint enjoy, eval and the ONNX export load: the latest or the best-scoring one. Resuming "
        "a training run always continues from the latest.",
    )
    g.add_argument(
        "--save_milestones_sec",
        type=int,
        default=-1,
        help="Also keep a permanent copy in milestones/ every this many seconds; -1 disables.",
    )
    g.add_argument("--save_best_every_sec", type=int, default=5, help="Seconds between checks for a new best policy.")
    g.add_argument(
        "--save_best_metric",
        type=str,
        default="reward",
        help="Metric that selects the best policy: reward or a key of episode_extra_stats (averages of the training "
        "episodes), or an evaluation result such as eval/avg_reward (with --eval_every_env_steps).",
    )
    g.add_argument(
        "--save_best_after", type=int, default=100000, help="Env steps before best-policy checkpoints start."
    )


def add_fault_tolerance_args(p: ArgParser) -> None:
    """What a parallel run does when a worker process dies or hangs, or an env raises (docs/reliability.md)."""
    g = p.add_argument_group(
        "Fault tolerance", "Restarting dead or silent worker processes in place; recreating envs that raise."
    )
    g.add_argument(
        "--heartbeat_timeout",
        type=int,
        default=120,
        help="Parallel mode: a worker process that sends no heartbeat for this many seconds (an env step or a "
        "simulator that hangs, a deadlock) is killed and restarted like a dead one. 0 disables the check. Raise it "
        "when single env steps or checkpoint writes legitimately take minutes. Serial mode: a main loop silent this "
        "long (a hung env step) ends the run with FAILURE and a log of where it is stuck.",
    )
    g.add_argument(
        "--max_restarts",
        type=int,
        default=3,
        help="Parallel mode: how many times one worker process (a rollout worker, an inference worker, a "
        "policy's learner) may be restarted after dying or hanging; one more death stops the run with FAILURE "
        "and its last traceback. 0 turns restarts off (any dead worker ends the run).",
    )
    g.add_argument(
        "--max_restarts_total",
        type=int,
        default=10,
        help="Parallel mode: restarts of all worker processes together after which the next death stops the run "
        "with FAILURE (a machine that keeps killing processes, e.g. out of memory, is not worth fighting).",
    )
    g.add_argument(
        "--env_error_behavior",
        type=str,
        default="recreate",
        choices=["recreate", "fail"],
        help="An env whose step or reset raises: recreate closes it, makes a new one on the same worker, drops its "
        "unfinished episode from the statistics and goes on (an env that fails 3 times in a row without finishing "
        "an episode still ends the run); fail ends the run at once with the traceback (for debugging an env).",
    )


def add_distributed_args(p: ArgParser) -> None:
    """One experiment trained by several ranks, started by torchrun or Slurm (docs/distributed.md)."""
    g = p.add_argument_group(
        "Distributed training",
        "Several ranks (machines, or GPUs of one machine) train one experiment, each with its own workers and learner, "
        "averaging gradients every SGD step. A run is distributed when RANK, WORLD_SIZE > 1, MASTER_ADDR and "
        "MASTER_PORT are set (torchrun and the launcher's Slurm backend set them); these flags tune it.",
    )
    g.add_argument(
        "--distributed_backend",
        type=str,
        default="auto",
        choices=["auto", "gloo", "nccl"],
        help="Collective backend of the ranks' learners: auto takes nccl when the learner is on a GPU and gloo on the "
        "CPU; nccl needs GPU learners.",
    )
    g.add_argument(
        "--distributed_timeout",
        type=int,
        default=120,
        help="Seconds a rank waits for the others (to start, to join a training round or an all-reduce) before the "
        "run stops with an error naming the late or dead ranks. Raise it when one rank's batches can legitimately "
        "come this much later than the others' (slow env start-up on some machines).",
    )


def add_legacy_aliases(p: ArgParser) -> None:
    """Old flag names that still parse; :func:`parse_full_cfg` maps them to the new dest with a warning.

    They have no default (``SUPPRESS``) so they appear in the parsed namespace only when given.
    """
    g = p.add_argument_group("Legacy aliases", "Old names kept so 1.x command lines still run.")
    for old, new in LEGACY_ALIASES.items():
        g.add_argument(
            f"--{old}", type=int, default=argparse.SUPPRESS, help=f"Deprecated name of --{new}; use --{new}."
        )
