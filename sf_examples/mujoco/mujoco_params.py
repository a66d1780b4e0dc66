"""Flags of the MuJoCo family and the defaults it sets on Sample Factory's own flags."""

from __future__ import annotations

import argparse
from typing import Any

# Sample Factory 2.1.1's MuJoCo defaults, value for value (tests/envs/test_family_defaults.py holds them to it);
# anything given on the command line still wins. docs/mujoco.md says what to pass on a small machine.
MUJOCO_DEFAULTS: dict[str, Any] = {
    # 8 synchronous workers x 8 envs in 2 splits, 64-step rollouts: 4096 samples per round, one training batch
    "serial_mode": False,
    "async_rl": False,
    "batched_sampling": False,
    "num_workers": 8,
    "num_envs_per_worker": 8,
    "worker_num_splits": 2,
    "rollout": 64,
    # 1024 samples per update in 4 minibatches, two passes: several SGD steps per sample, as PPO does
    "batch_size": 1024,
    "num_batches_per_epoch": 4,
    "num_epochs": 2,
    "shuffle_minibatches": False,
    "train_for_env_steps": 10_000_000,
    # proprioceptive states are fully observed: a feed-forward tanh MLP, as in the PPO paper's MuJoCo runs
    "use_rnn": False,
    "recurrence": 1,
    "encoder_mlp_layers": [64, 64],
    "nonlinearity": "tanh",
    "policy_initialization": "torch_default",
    # state-independent, learned action noise (log-std parameters)
    "adaptive_stddev": False,
    "env_frameskip": 1,
    # a high starting rate annealed linearly to 0 by the end of train_for_env_steps, with a KL penalty on top
    "learning_rate": 0.00295,
    "lr_schedule": "linear_decay",
    "kl_loss_coeff": 0.1,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "with_vtrace": False,
    "ppo_clip_ratio": 0.2,
    "value_loss_coeff": 1.3,
    "max_grad_norm": 3.5,
    # exploration comes from the Gaussian noise; no entropy bonus
    "exploration_loss_coeff": 0.0,
    "reward_scale": 1,
    # time-limit truncations (1000 steps) are bootstrapped from the value of the last state, not treated as deaths
    "value_bootstrap": True,
    # joint angles and velocities differ by orders of magnitude; returns run into the thousands
    "normalize_input": True,
    "normalize_returns": True,
    "experiment_summaries_interval": 3,
    "save_every_sec": 15,
}


# --mujoco_version: Sample Factory 2's tasks (the default) or Gymnasium's current ones
MUJOCO_VERSIONS = ("v4", "v5")
DEFAULT_MUJOCO_VERSION = "v4"


def add_mujoco_flags(parser: argparse.ArgumentParser) -> None:
    """The family's own flags (saved in config.json, so enjoy renders the same way): the family table's hook."""
    group = parser.add_argument_group("MuJoCo", "Flags of the mujoco_* envs.")
    group.add_argument(
        "--mujoco_render_width",
        type=int,
        default=320,
        help="Width of recorded video frames (enjoy --save_video); larger frames render slower without a GPU.",
    )
    group.add_argument("--mujoco_render_height", type=int, default=240, help="Height of recorded video frames.")
    group.add_argument(
        "--mujoco_version",
        choices=MUJOCO_VERSIONS,
        default=DEFAULT_MUJOCO_VERSION,
        help="v4: Sample Factory 2's tasks (Gymnasium's v4 envs), the actions as sampled, their control cost charged "
        "on them (its published scores); v5: Gymnasium's current tasks, actions clipped to [-1, 1] and rescaled to "
        "the task's range.",
    )


def set_mujoco_defaults(parser: argparse.ArgumentParser, evaluation: bool = False) -> None:
    """Family defaults (``MUJOCO_DEFAULTS``), the same for training and evaluation: the family table's hook."""
    del evaluation  # enjoy and eval sample actions unless --eval_deterministic=True, as in Sample Factory 2
    parser.set_defaults(**MUJOCO_DEFAULTS)


def add_mujoco_env_args(env: str | None, parser: argparse.ArgumentParser) -> None:
    """Sample Factory 2's form of :func:`add_mujoco_flags`: the env name first (the same flags for every task)."""
    del env
    add_mujoco_flags(parser)


def mujoco_override_defaults(env: str | None, parser: argparse.ArgumentParser) -> None:
    """Sample Factory 2's form of :func:`set_mujoco_defaults`: the env name first (the same for every task)."""
    del env
    set_mujoco_defaults(parser)
