"""Flags of the MuJoCo family and the defaults it sets on Sample Factory's own flags."""

from __future__ import annotations

import argparse
from typing import Any

# Sample Factory 2's published MuJoCo settings where they fit a small machine (docs/mujoco.md lists each choice and
# what was measured); anything given on the command line still wins.
MUJOCO_DEFAULTS: dict[str, Any] = {
    # two workers x 8 envs in 2 splits: one split steps while the other waits for actions
    "num_workers": 2,
    "num_envs_per_worker": 8,
    "worker_num_splits": 2,
    # 1024 samples per update in 4 minibatches of 256, two passes: several SGD steps per sample, as PPO does
    "rollout": 64,
    "batch_size": 1024,
    "num_batches_per_epoch": 4,
    "num_epochs": 2,
    # proprioceptive states are fully observed: a feed-forward tanh MLP, as in the PPO paper's MuJoCo runs
    "use_rnn": False,
    "encoder_mlp_layers": [64, 64],
    "nonlinearity": "tanh",
    "policy_initialization": "torch_default",
    # state-independent, learned action noise (log-std parameters), starting at 1 in the policy's [-1, 1] box
    "adaptive_stddev": False,
    "initial_stddev": 1.0,
    "learning_rate": 3e-4,
    # the KL-adaptive schedule lowers the step size when an epoch moves the policy too far
    "lr_schedule": "kl_adaptive_epoch",
    "lr_schedule_kl_threshold": 0.008,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "ppo_clip_ratio": 0.2,
    "value_loss_coeff": 1.3,
    "max_grad_norm": 3.5,
    # exploration comes from the Gaussian noise; an entropy bonus only keeps it from shrinking
    "exploration_loss_coeff": 0.0,
    # joint angles and velocities differ by orders of magnitude; returns run into the thousands
    "normalize_input": True,
    "normalize_returns": True,
}
# watching and evaluating: the mean action, the usual way MuJoCo policies are scored
MUJOCO_EVAL_DEFAULTS: dict[str, Any] = {"eval_deterministic": True}


def add_mujoco_env_args(parser: argparse.ArgumentParser) -> None:
    """The family's own flags (saved in config.json, so enjoy renders the same way)."""
    group = parser.add_argument_group("MuJoCo", "Flags of the mujoco_* envs.")
    group.add_argument(
        "--mujoco_render_width",
        type=int,
        default=320,
        help="Width of recorded video frames (enjoy --save_video); larger frames render slower without a GPU.",
    )
    group.add_argument("--mujoco_render_height", type=int, default=240, help="Height of recorded video frames.")


def mujoco_override_defaults(parser: argparse.ArgumentParser, evaluation: bool = False) -> None:
    """Family defaults (``MUJOCO_DEFAULTS``); enjoy and eval also take the mean action."""
    parser.set_defaults(**MUJOCO_DEFAULTS)
    if evaluation:
        parser.set_defaults(**MUJOCO_EVAL_DEFAULTS)
