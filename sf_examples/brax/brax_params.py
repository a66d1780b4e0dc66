"""The Brax family's env names, flags and defaults (nothing here imports jax or brax)."""

from __future__ import annotations

import argparse
from typing import Any

from sample_factory.utils.utils import str2bool

# brax.envs' registered tasks, as --env takes them (``fast`` is brax's own test env and is left out)
BRAX_ENVS: tuple[str, ...] = (
    "ant",
    "halfcheetah",
    "hopper",
    "humanoid",
    "humanoidstandup",
    "inverted_double_pendulum",
    "inverted_pendulum",
    "pusher",
    "reacher",
    "swimmer",
    "walker2d",
)
DEFAULT_BRAX_ENV = "ant"

# One serial, synchronous process: the jax program simulates --env_agents copies in one call (the batched sampler
# takes it as one vectorised env), the learner trains on each round of rollouts while the simulation waits. Sized
# for a GPU (2048 copies x 32 steps = 65,536 samples per round = one batch of 2 minibatches, 5 epochs); on a CPU
# pass e.g. --env_agents=64 --batch_size=1024 (docs/brax.md). The command line still wins.
BRAX_DEFAULTS: dict[str, Any] = {
    "env": DEFAULT_BRAX_ENV,
    "batched_sampling": True,
    "num_envs_per_worker": 1,
    "worker_num_splits": 1,
    "serial_mode": True,
    "async_rl": False,
    "num_workers": 1,
    "decorrelate_experience_max_seconds": 0,
    "train_for_env_steps": 100_000_000,
    "env_agents": 2048,
    "rollout": 32,
    "batch_size": 32768,
    "num_batches_per_epoch": 2,
    "num_epochs": 5,
    "learning_rate": 3e-4,
    "lr_schedule": "kl_adaptive_epoch",
    "lr_schedule_kl_threshold": 0.008,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "with_vtrace": False,
    "ppo_clip_ratio": 0.2,
    "value_loss_coeff": 2.0,
    "exploration_loss_coeff": 0.0,
    "max_grad_norm": 1.0,
    # episodes are truncated at --brax_episode_length: bootstrap from the last state's value there
    "value_bootstrap": True,
    "encoder_mlp_layers": [256, 128, 64],
    "nonlinearity": "elu",
    "policy_initialization": "torch_default",
    "use_rnn": False,
    "recurrence": 1,
    "normalize_input": True,
    "normalize_returns": True,
    "adaptive_stddev": False,
    "experiment_summaries_interval": 15,
    "save_every_sec": 60,
}


def add_brax_env_args(env: str | None, parser: argparse.ArgumentParser) -> None:
    """Flags of the Brax envs (saved in config.json, so enjoy rebuilds the same batch)."""
    del env
    group = parser.add_argument_group("Brax", "Flags of the Brax (jax) envs.")
    group.add_argument(
        "--env_agents",
        type=int,
        default=BRAX_DEFAULTS["env_agents"],
        help="Copies of the env simulated by one jax call; each is one agent of the batched sampler. Thousands on "
        "a GPU, tens on a CPU. Samples per rollout round = env_agents x rollout.",
    )
    group.add_argument(
        "--brax_episode_length",
        type=int,
        default=1000,
        help="Steps after which an episode is truncated (a time-out: bootstrapped with --value_bootstrap).",
    )
    group.add_argument(
        "--brax_backend",
        type=str,
        default="",
        help="Brax physics pipeline: generalized, positional, spring or mjx; empty: the env's own default "
        "(generalized for the locomotion tasks). spring is the cheapest on a CPU.",
    )
    group.add_argument(
        "--clamp_actions",
        type=str2bool,
        default=False,
        help="Clip actions to [-1, 1] (the tasks' control range) inside the jax step.",
    )
    group.add_argument(
        "--clamp_rew_obs",
        type=str2bool,
        default=False,
        help="Clip rewards and observations to [-100, 100] inside the jax step (guards against rare blow-ups).",
    )
    group.add_argument(
        "--brax_render_res",
        type=int,
        default=200,
        help="Side in pixels of the square frames enjoy shows or records. Rendering goes through MuJoCo's "
        "renderer one frame at a time, so larger frames only for offscreen videos.",
    )


def brax_override_defaults(env: str | None, parser: argparse.ArgumentParser) -> None:
    """Apply :data:`BRAX_DEFAULTS` for every Brax env; explicit command-line flags still win."""
    del env
    parser.set_defaults(**BRAX_DEFAULTS)
