"""Declarations of every command-line flag, one small function per topic.

Each ``add_*_args`` function puts its flags into a named argument group so that ``--help`` and the generated
flag reference (``docs/flags.md``) show them by topic. Env families call these through
:func:`sample_factory.cfg.arguments.parse_sf_args` and then add their own flags or override defaults with
``parser.set_defaults(...)`` before the final parse.

Help strings avoid the percent sign: argparse expands ``%(...)s`` patterns in them.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os

from sample_factory.utils.utils import str2bool

ArgParser = argparse.ArgumentParser

# Flags renamed since the 1.x releases: old dest -> new dest. The old spelling still parses (with a warning).
LEGACY_ALIASES: dict[str, str] = {
    "ppo_epochs": "num_epochs",
    "num_minibatches_to_accumulate": "num_batches_to_accumulate",
}


def add_basic_cli_args(p: ArgParser) -> None:
    """What to train, where to write it, and on which device."""
    g = p.add_argument_group("Basic", "What to run and where its files go.")
    g.add_argument(
        "--algo",
        type=str,
        default="APPO",
        help="RL algorithm. Only APPO is implemented: any other value is refused (the flag exists so Sample Factory 2 "
        "command lines and config.json files still load).",
    )
    g.add_argument("--env", type=str, default=None, help="Registered env name; its prefix selects the env family.")
    g.add_argument(
        "--experiment",
        type=str,
        default="default_experiment",
        help="Name of the experiment folder inside --train_dir; reuse a name to resume that run.",
    )
    g.add_argument(
        "--train_dir",
        type=str,
        default=os.path.join(os.getcwd(), "train_dir"),
        help="Root folder for all experiments (checkpoints, config.json, logs, summaries).",
    )
    g.add_argument(
        "--restart_behavior",
        type=str,
        default="resume",
        choices=["resume", "restart", "overwrite"],
        help="What to do when the experiment folder already exists: resume it, move it aside and start fresh "
        "(restart), or delete it (overwrite).",
    )
    g.add_argument(
        "--device",
        type=str,
        default="gpu",
        choices=["gpu", "cpu"],
        help="Where the learner and inference run; gpu falls back to cpu with a warning when CUDA is missing.",
    )
    g.add_argument("--seed", type=int, default=None, help="Fix the random seeds for reproducible runs; None = random.")


def add_rl_args(p: ArgParser) -> None:
    """Everything about sampling, the PPO/V-trace update, optimisation, logging and checkpoints."""
    add_sampling_args(p)
    add_batching_args(p)
    add_loss_args(p)
    add_optimizer_args(p)
    add_obs_normalization_args(p)
    add_process_args(p)
    add_logging_args(p)
    add_checkpoint_args(p)
    add_fault_tolerance_args(p)
    add_legacy_aliases(p)


def add_sampling_args(p: ArgParser) -> None:
    """How experience is collected: workers, envs, policies and the async pipeline."""
    g = p.add_argument_group("Sampling", "How many workers and envs collect experience, and how asynchronously.")
    g.add_argument(
        "--num_policies", type=int, default=1, help="Number of policies trained at once (>1 for PBT/self-play)."
    )
    g.add_argument(
        "--async_rl",
        type=str2bool,
        default=True,
        help="Collect while the learner trains (faster, slightly off-policy); False makes every sample on-policy.",
    )
    g.add_argument(
        "--serial_mode",
        type=str2bool,
        default=False,
        help="Run every component in one process: for debugging, profiling and GPU-simulated envs.",
    )
    g.add_argument(
        "--batched_sampling",
        type=str2bool,
        default=False,
        help="Step each split's envs as one batch and write whole steps at once. Works with any env (envs are stacked "
        "one after another); a natively vectorised env alone in its split is used as is. Suits vectorised or GPU envs.",
    )
    g.add_argument(
        "--num_batches_to_accumulate",
        type=int,
        default=2,
        help="Training batches the learner may fall behind before collection pauses; raise it if workers idle.",
    )
    g.add_argument(
        "--worker_num_splits",
        type=int,
        default=2,
        help="Groups each worker's envs are split into; 2 double-buffers (one group steps while the other waits).",
    )
    g.add_argument(
        "--policy_workers_per_policy",
        type=int,
        default=1,
        help="Inference processes per policy; add more when inference is the bottleneck.",
    )
    g.add_argument(
        "--max_policy_lag",
        type=int,
        default=1000,
        help="Discard experience collected by a policy this many versions older than the learner's.",
    )
    g.add_argument(
        "--num_workers",
        type=int,
        default=multiprocessing.cpu_count(),
        help="Rollout worker processes; defaults to the number of logical CPUs.",
    )
    g.add_argument(
        "--num_envs_per_worker",
        type=int,
        default=2,
        help="Envs each worker steps; must be a multiple of --worker_num_splits. Raise it for cheap envs.",
    )


def add_batching_args(p: ArgParser) -> None:
    """Sizes of trajectories, minibatches and the number of passes over them."""
    g = p.add_argument_group("Batching", "Trajectory length, minibatch size and epochs of the PPO update.")
    g.add_argument("--batch_size", type=int, default=1024, help="Samples per minibatch (one optimiser step).")
    g.add_argument(
        "--num_batches_per_epoch",
        type=int,
        default=1,
        help="Minibatches in one training iteration; the learner waits for batch_size times this many samples.",
    )
    g.add_argument(
        "--num_epochs", type=int, default=1, help="Passes over each training batch; >1 reuses data, more off-policy."
    )
    g.add_argument("--rollout", type=int, default=32, help="Length of the trajectories workers send to the learner.")
    g.add_argument(
        "--recurrence",
        type=int,
        default=-1,
        help="Steps of backpropagation through time; -1 means --rollout with an RNN and 1 without.",
    )
    g.add_argument(
        "--shuffle_minibatches",
        type=str2bool,
        default=False,
        help="Shuffle samples across trajectories into minibatches (only meaningful with --recurrence=1).",
    )


def add_loss_args(p: ArgParser) -> None:
    """Returns, advantages and the terms of the PPO loss."""
    g = p.add_argument_group("Losses", "Discounting, advantage estimation and the terms of the PPO loss.")
    g.add_argument("--gamma", type=float, default=0.99, help="Discount factor; lower it for short-horizon tasks.")
    g.add_argument("--reward_scale", type=float, default=1.0, help="Multiply env rewards by this before training.")
    g.add_argument("--reward_clip", type=float, default=1000.0, help="Clip scaled rewards to [-x, x].")
    g.add_argument(
        "--value_bootstrap",
        type=str2bool,
        default=False,
        help="On time-limit truncation bootstrap from the value estimate instead of treating it as a terminal.",
    )
    g.add_argument(
        "--normalize_returns", type=str2bool, default=True, help="Normalise value targets with running statistics."
    )
    g.add_argument(
        "--exploration_loss_coeff", type=float, default=0.003, help="Weight of the exploration (entropy) bonus."
    )
    g.add_argument("--value_loss_coeff", type=float, default=0.5, help="Weight of the value loss.")
    g.add_argument(
        "--kl_loss_coeff",
        type=float,
        default=0.0,
        help="Weight of a KL penalty between the behaviour and the current policy; 0 disables it.",
    )
    g.add_argument(
        "--exploration_loss",
        type=str,
        default="entropy",
        choices=["entropy", "symmetric_kl"],
        help="Exploration bonus; symmetric_kl (to a uniform prior) works only with discrete actions.",
    )
    g.add_argument("--gae_lambda", type=float, default=0.95, help="GAE lambda: bias/variance trade-off of advantages.")
    g.add_argument(
        "--ppo_clip_ratio", type=float, default=0.1, help="PPO clipping range of the policy probability ratio around 1."
    )
    g.add_argument(
        "--ppo_clip_value", type=float, default=1.0, help="Largest change of the value estimate per update (clipping)."
    )
    g.add_argument(
        "--with_vtrace",
        type=str2bool,
        default=False,
        help="Use V-trace off-policy correction instead of GAE; needs --recurrence equal to --rollout.",
    )
    g.add_argument("--vtrace_rho", type=float, default=1.0, help="V-trace truncation of importance weights (rho).")
    g.add_argument("--vtrace_c", type=float, default=1.0, help="V-trace truncation of trace coefficients (c).")


def add_optimizer_args(p: ArgParser) -> None:
    """The optimiser and the learning-rate schedule."""
    g = p.add_argument_group("Optimizer", "Optimiser, gradient clipping and learning-rate schedule.")
    g.add_argument("--optimizer", type=str, default="adam", choices=["adam", "lamb"], help="Optimiser to use.")
    g.add_argument("--adam_eps", type=float, default=1e-6, help="Adam epsilon (numerical stability).")
    g.add_argument("--adam_beta1", type=float, default=0.9, help="Adam beta1 (momentum).")
    g.add_argument("--adam_beta2", type=float, default=0.999, help="Adam beta2 (second moment decay).")
    g.add_argument("--max_grad_norm", type=float, default=4.0, help="Clip the gradient norm to this; 0 disables.")
    g.add_argument("--learning_rate", type=float, default=1e-4, help="Initial learning rate.")
    g.add_argument(
        "--lr_schedule",
        type=str,
        default="constant",
        choices=["constant", "kl_adaptive_minibatch", "kl_adaptive_epoch", "linear_decay"],
        help="Keep the rate constant, adapt it to the policy KL after every minibatch or epoch, or decay it linearly "
        "to 0 over train_for_env_steps // batch_size * num_epochs minibatch updates.",
    )
    g.add_argument(
        "--lr_schedule_kl_threshold", type=float, default=0.008, help="Target KL of the kl_adaptive schedules."
    )
    g.add_argument("--lr_adaptive_min", type=float, default=1e-6, help="Lowest rate a kl_adaptive schedule may set.")
    g.add_argument("--lr_adaptive_max", type=float, default=1e-2, help="Highest rate a kl_adaptive schedule may set.")


def add_obs_normalization_args(p: ArgParser) -> None:
    """Fixed and running normalisation of observations."""
    g = p.add_argument_group("Observation normalization", "Fixed scaling and running mean/std normalisation.")
    g.add_argument("--obs_subtract_mean", type=float, default=0.0, help="Subtract this from image observations.")
    g.add_argument("--obs_scale", type=float, default=1.0, help="Divide image observations by this (255 for pixels).")
    g.add_argument(
        "--normalize_input", type=str2bool, default=True, help="Normalise observations with running mean/std."
    )
    g.add_argument(
        "--normalize_input_keys",
        type=str,
        default=None,
        nargs="*",
        help="Observation dict keys to normalise; None normalises every key.",
    )


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
        help="Metric that selects the best policy: reward or a key of episode_extra_stats.",
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


def add_legacy_aliases(p: ArgParser) -> None:
    """Old flag names that still parse; :func:`parse_full_cfg` maps them to the new dest with a warning.

    They have no default (``SUPPRESS``) so they appear in the parsed namespace only when given.
    """
    g = p.add_argument_group("Legacy aliases", "Old names kept so 1.x command lines still run.")
    for old, new in LEGACY_ALIASES.items():
        g.add_argument(
            f"--{old}", type=int, default=argparse.SUPPRESS, help=f"Deprecated name of --{new}; use --{new}."
        )


def add_model_args(p: ArgParser) -> None:
    """Architecture of the actor-critic: encoder, recurrent core, decoder, heads and initialisation."""
    g = p.add_argument_group("Model", "Encoder, recurrent core, decoder, action heads and initialisation.")
    g.add_argument(
        "--encoder_mlp_layers", type=int, default=[512, 512], nargs="*", help="Layer sizes of the vector-obs encoder."
    )
    g.add_argument(
        "--encoder_conv_architecture",
        type=str,
        default="convnet_simple",
        choices=["convnet_simple", "convnet_impala", "convnet_atari", "resnet_impala"],
        help="Convolutional encoder for image observations.",
    )
    g.add_argument(
        "--encoder_conv_mlp_layers",
        type=int,
        default=[512],
        nargs="*",
        help="Fully connected layers after the convolutions.",
    )
    g.add_argument(
        "--use_rnn", type=str2bool, default=True, help="Use a recurrent core; turn off for fully observable tasks."
    )
    g.add_argument("--rnn_size", type=int, default=512, help="Hidden size of the recurrent core.")
    g.add_argument("--rnn_type", type=str, default="gru", choices=["gru", "lstm"], help="Type of the recurrent core.")
    g.add_argument("--rnn_num_layers", type=int, default=1, help="Stacked layers of the recurrent core.")
    g.add_argument(
        "--decoder_mlp_layers", type=int, default=[], nargs="*", help="Layers between the core and the heads."
    )
    g.add_argument(
        "--nonlinearity", type=str, default="elu", choices=["elu", "relu", "tanh"], help="Activation in the model."
    )
    g.add_argument(
        "--policy_initialization",
        type=str,
        default="orthogonal",
        choices=["orthogonal", "xavier_uniform", "torch_default"],
        help="Weight initialisation of the model.",
    )
    g.add_argument("--policy_init_gain", type=float, default=1.0, help="Gain of the weight initialisation.")
    g.add_argument(
        "--actor_critic_share_weights",
        type=str2bool,
        default=True,
        help="One encoder/core for policy and value; False gives the critic its own copy (twice the compute).",
    )
    g.add_argument(
        "--adaptive_stddev",
        type=str2bool,
        default=True,
        help="Continuous actions: the network outputs the stddev; False learns one state-independent stddev.",
    )
    g.add_argument(
        "--continuous_tanh_scale",
        type=float,
        default=0.0,
        help="Continuous actions: squash action means with tanh times this; 0 leaves them unbounded.",
    )
    g.add_argument(
        "--initial_stddev",
        type=float,
        default=1.0,
        help="Continuous actions with --adaptive_stddev=False: initial value of the learned stddev (the adaptive "
        "head starts near 1 whatever this is).",
    )


def add_default_env_args(p: ArgParser) -> None:
    """Env-side settings every family shares; families override their defaults."""
    g = p.add_argument_group("Environment", "Settings shared by all env families (families override defaults).")
    g.add_argument(
        "--use_env_info_cache",
        type=str2bool,
        default=False,
        help="Keep the env's spaces and agent count in env_info.pkl in the experiment folder and reuse them, so the "
        "runner need not create an env at start-up (for slow-starting envs). Delete the file when the env's "
        "spaces change (e.g. another resolution or wrapper).",
    )
    g.add_argument(
        "--env_gpu_actions",
        type=str2bool,
        default=False,
        help="The env takes actions as tensors on the training device (GPU simulators); needs --batched_sampling=True "
        "and a natively vectorised env alone in each split.",
    )
    g.add_argument(
        "--env_gpu_observations",
        type=str2bool,
        default=True,
        help="Meant for GPU simulators: keep GPU observations on the GPU. Today observations are always copied into "
        "the CPU trajectory buffers whatever this is; GPU-resident buffers are part of the GPU work.",
    )
    g.add_argument(
        "--env_frameskip",
        type=int,
        default=1,
        help="Env frames one agent step stands for (action repeat). Sample Factory multiplies frame counts by it; "
        "the env factory must repeat actions itself: the gym and doom families do, custom factories must read "
        "this flag.",
    )
    g.add_argument(
        "--env_framestack",
        type=int,
        default=1,
        help="Last N image frames stacked along the channel axis (motion cues without an RNN). Applied by the gym and "
        "doom families to image observations; custom env factories must read this flag themselves.",
    )
    g.add_argument(
        "--pixel_format",
        type=str,
        default="CHW",
        help="CHW or HWC: layout of image observations given to the model. The built-in conv encoders need CHW, "
        "which the gym and doom families produce; HWC keeps the env's channels-last images (for custom encoders). "
        "Custom env factories must read this flag themselves.",
    )
    g.add_argument(
        "--use_record_episode_statistics",
        type=str2bool,
        default=False,
        help="Report each episode's reward and length as recorded in info['episode'] by a RecordEpisodeStatistics "
        "wrapper (the gym family adds one) instead of Sample Factory's own sums of the rewards it sees: use it when "
        "a wrapper changes rewards (clipping, scaling) and you want the env's true score in the stats.",
    )


def add_wandb_args(p: ArgParser) -> None:
    """Weights & Biases logging (needs the optional wandb package)."""
    g = p.add_argument_group("Weights & Biases", "Optional experiment tracking; requires the wandb package.")
    g.add_argument("--with_wandb", type=str2bool, default=False, help="Log summaries to Weights & Biases.")
    g.add_argument("--wandb_user", type=str, default=None, help="W&B entity (user or team).")
    g.add_argument("--wandb_project", type=str, default="sample_factory", help="W&B project.")
    g.add_argument("--wandb_group", type=str, default=None, help="W&B group; defaults to the env name when None.")
    g.add_argument("--wandb_job_type", type=str, default="SF", help="W&B job type.")
    g.add_argument("--wandb_tags", type=str, default=[], nargs="*", help="W&B tags of the run.")


def add_pbt_args(p: ArgParser) -> None:
    """Population-based training over --num_policies policies."""
    g = p.add_argument_group("Population-based training", "Mutate and replace hyper-parameters across policies.")
    g.add_argument("--with_pbt", type=str2bool, default=False, help="Enable PBT (needs --num_policies > 1).")
    g.add_argument(
        "--pbt_mix_policies_in_one_env",
        type=str2bool,
        default=True,
        help="Multi-agent envs: let different policies control agents of the same env.",
    )
    g.add_argument("--pbt_period_env_steps", type=int, default=int(5e6), help="Env steps between PBT rounds.")
    g.add_argument("--pbt_start_mutation", type=int, default=int(2e7), help="Env steps before the first mutation.")
    g.add_argument(
        "--pbt_replace_fraction", type=float, default=0.3, help="Fraction of worst policies replaced by the best."
    )
    g.add_argument(
        "--pbt_mutation_rate", type=float, default=0.15, help="Probability of mutating each hyper-parameter."
    )
    g.add_argument(
        "--pbt_replace_reward_gap",
        type=float,
        default=0.1,
        help="Replace a policy only if the best beats it by this relative margin.",
    )
    g.add_argument(
        "--pbt_replace_reward_gap_absolute",
        type=float,
        default=1e-6,
        help="Replace a policy only if the best beats it by at least this absolute margin.",
    )
    g.add_argument("--pbt_optimize_gamma", type=str2bool, default=False, help="Also mutate the discount --gamma.")
    g.add_argument(
        "--pbt_target_objective",
        type=str,
        default="true_objective",
        help="Info key PBT maximises; falls back to the episode reward when the env does not report it.",
    )
    g.add_argument("--pbt_perturb_min", type=float, default=1.1, help="Smallest multiplicative mutation factor.")
    g.add_argument("--pbt_perturb_max", type=float, default=1.5, help="Largest multiplicative mutation factor.")


def add_eval_args(p: ArgParser) -> None:
    """Flags of the enjoy/eval scripts only (``parse_sf_args(evaluation=True)``)."""
    g = p.add_argument_group("Evaluation", "Only for enjoy/eval scripts: rendering, videos, episode limits, hub.")
    g.add_argument("--fps", type=int, default=0, help="Limit rendering to this many frames per second; 0 = no limit.")
    g.add_argument(
        "--eval_env_frameskip",
        type=int,
        default=None,
        help="Frameskip while evaluating; None uses --env_frameskip. Use 1 to watch every frame.",
    )
    g.add_argument("--no_render", action="store_true", help="Enjoy: do not render (faster evaluation).")
    g.add_argument(
        "--save_video", action="store_true", help="Enjoy: record a video of the episodes instead of rendering."
    )
    g.add_argument("--video_frames", type=int, default=1e9, help="Enjoy: stop recording after this many frames.")
    g.add_argument(
        "--video_name",
        type=str,
        default=None,
        help="Enjoy: video file name inside the experiment folder (sub-folders are created); None = replay.mp4.",
    )
    g.add_argument("--max_num_frames", type=int, default=1e9, help="Stop evaluating after this many frames.")
    g.add_argument("--max_num_episodes", type=int, default=1e9, help="Stop evaluating after this many episodes.")
    g.add_argument(
        "--push_to_hub",
        action="store_true",
        help="Enjoy: upload the experiment (model card, config.json, latest checkpoints, the recorded replay) to the "
        "Hugging Face Hub repository --hf_repository after recording; see docs/huggingface.md.",
    )
    g.add_argument(
        "--hf_repository",
        type=str,
        default=None,
        help="Hub repository (user/name) for --push_to_hub; ignored (with a warning) without it.",
    )
    g.add_argument("--policy_index", type=int, default=0, help="Which policy to evaluate when several were trained.")
    g.add_argument(
        "--eval_deterministic",
        type=str2bool,
        default=False,
        help="Take the most likely action instead of sampling.",
    )
    g.add_argument(
        "--train_script",
        type=str,
        default=None,
        help="Training module named in the hints enjoy/eval print when an experiment has no checkpoint and in a Hub "
        "model card; None = sf_examples.train_gym_env.",
    )
    g.add_argument(
        "--enjoy_script",
        type=str,
        default=None,
        help="Enjoy module named in hints: sample_factory.eval's warning about enjoy-only flags and the 'watch it' "
        "line of sf_examples.train_gym_env (a training script sets it with parser.set_defaults); also in a Hub "
        "model card. None = sf_examples.enjoy_gym_env.",
    )
