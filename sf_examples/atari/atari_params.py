"""Flags of the Atari family and the defaults it sets on Sample Factory's own flags."""

from __future__ import annotations

import argparse
from typing import Any

from sample_factory.utils.utils import str2bool

# PPO's Atari settings (Schulman et al. 2017, as CleanRL and Sample Factory 2 use them) on the DQN preprocessing
# (Mnih et al. 2015); docs/atari.md says what was measured. Anything given on the command line still wins.
ATARI_DEFAULTS: dict[str, Any] = {
    # the standard preprocessing (sf_examples/atari/atari_utils.py): an action every 4 frames, 4 frames stacked
    "env_frameskip": 4,
    "env_framestack": 4,
    # the Nature DQN conv net and its 512-unit layer, on pixels scaled to [0, 1]
    "encoder_conv_architecture": "convnet_atari",
    "encoder_conv_mlp_layers": [512],
    "nonlinearity": "relu",
    "obs_scale": 255.0,
    "normalize_input": False,
    "use_rnn": False,
    # the DQN reward clipping, done by the learner so the logged episode rewards stay raw game scores
    "reward_clip": 1.0,
    "normalize_returns": False,
    # 2 workers x 8 envs, 128-step rollouts; 4 epochs over 4 minibatches of 256 (PPO's 1024-sample update)
    "num_workers": 2,
    "num_envs_per_worker": 8,
    "worker_num_splits": 2,
    "rollout": 128,
    "batch_size": 256,
    "num_batches_per_epoch": 4,
    "num_epochs": 4,
    "learning_rate": 2.5e-4,
    "adam_eps": 1e-5,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "ppo_clip_ratio": 0.1,
    "value_loss_coeff": 0.5,
    "exploration_loss": "entropy",
    "exploration_loss_coeff": 0.01,
    "max_grad_norm": 0.5,
}


def add_atari_env_args(parser: argparse.ArgumentParser) -> None:
    """The family's own flags (saved in config.json, so enjoy and eval rebuild the same game)."""
    group = parser.add_argument_group("Atari", "Flags of the atari_* envs.")
    group.add_argument(
        "--atari_episodic_life",
        type=str2bool,
        default=True,
        help="Training only: a lost life ends the learner's episode (the game goes on). Enjoy and eval always "
        "play whole games. Turn off for games where losing a life can be part of a good strategy.",
    )
    group.add_argument(
        "--atari_repeat_action_probability",
        type=float,
        default=0.0,
        help="Sticky actions: the chance the emulator repeats the previous action instead (Machado et al. 2018 "
        "recommend 0.25 to score robustness); 0 is the classic deterministic setting of DQN and PPO results.",
    )


def atari_override_defaults(parser: argparse.ArgumentParser, evaluation: bool = False) -> None:
    """Family defaults (``ATARI_DEFAULTS``), the same for training and evaluation."""
    del evaluation  # enjoy/eval differ in the env stack (whole games), chosen in atari_utils.make_atari_env
    parser.set_defaults(**ATARI_DEFAULTS)
