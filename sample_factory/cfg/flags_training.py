"""Flags of the training algorithm: sampling, batching, losses, optimiser, observation normalisation.

Help strings avoid the percent sign: argparse expands ``%(...)s`` patterns in them.
"""

from __future__ import annotations

import argparse
import multiprocessing

from sample_factory.utils.utils import str2bool

ArgParser = argparse.ArgumentParser


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
