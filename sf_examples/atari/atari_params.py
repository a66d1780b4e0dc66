"""Flags of the Atari family and the defaults it sets on Sample Factory's own flags."""

from __future__ import annotations

import argparse
from typing import Any

from sample_factory.utils.utils import str2bool

# The PPO update both Atari families (this one and EnvPool's) train with; Sample Factory 2 gives both the same values,
# after PPO's Atari settings (Schulman et al. 2017): 128-step rollouts, 4 epochs over 4 minibatches of 256 samples,
# Adam at a linearly decaying 2.5e-4, clip 0.1, entropy bonus 0.01.
PPO_ATARI_UPDATE: dict[str, Any] = {
    "rollout": 128,
    "batch_size": 256,
    "num_batches_per_epoch": 4,
    "num_epochs": 4,
    "shuffle_minibatches": False,
    "train_for_env_steps": 10_000_000,
    "learning_rate": 0.00025,
    "lr_schedule": "linear_decay",
    "adam_eps": 1e-5,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "with_vtrace": False,
    "ppo_clip_ratio": 0.1,
    "value_loss_coeff": 0.5,
    "kl_loss_coeff": 0.0,
    "exploration_loss": "entropy",
    "exploration_loss_coeff": 0.01,
    "max_grad_norm": 0.5,
    "experiment_summaries_interval": 3,
}

# Sample Factory 2.1.1's Atari defaults, value for value (PPO's Atari settings, Schulman et al. 2017, on the DQN
# preprocessing, Mnih et al. 2015), plus the one deviation below; tests/envs/test_family_defaults.py holds them to
# it. Anything given on the command line still wins; docs/atari.md says what to pass on a small machine.
ATARI_DEFAULTS: dict[str, Any] = {
    # the standard preprocessing (sf_examples/atari/atari_utils.py): an action every 4 frames, 4 frames stacked
    "env_frameskip": 4,
    "env_framestack": 4,
    # FPS and --train_for_env_steps count emulator frames; the env writes no info["episode"], so with the flag the
    # reported episode is still one life (whole games go to game_score, see atari_utils.GameStatsWrapper)
    "summaries_use_frameskip": True,
    "use_record_episode_statistics": True,
    # the Nature DQN conv net and its 512-unit layer, on pixels scaled to [0, 1], then normalised per pixel
    "encoder_conv_architecture": "convnet_atari",
    "encoder_conv_mlp_layers": [512],
    "nonlinearity": "relu",
    "obs_scale": 255.0,
    "normalize_input": True,
    "use_rnn": False,
    "recurrence": 1,
    "adaptive_stddev": False,
    # Deviation: SF2 clips rewards inside the env (to their sign); here the learner clips them to [-1, 1], so the
    # env's rewards stay game scores for enjoy, eval and every logged sum. Atari rewards are integers, where both
    # give the same training signal (measured in docs/atari.md).
    "reward_clip": 1.0,
    "reward_scale": 1.0,
    "normalize_returns": True,
    # 8 synchronous workers x 1 env x 128 steps: 1024 samples per round, PPO's one update of 4 x 4 minibatches
    **PPO_ATARI_UPDATE,
    "serial_mode": False,
    "async_rl": False,
    "batched_sampling": False,
    "num_workers": 8,
    "num_envs_per_worker": 1,
    "worker_num_splits": 1,
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


def set_atari_defaults(parser: argparse.ArgumentParser, evaluation: bool = False) -> None:
    """Family defaults (``ATARI_DEFAULTS``), the same for training and evaluation (the family table's hook)."""
    del evaluation  # enjoy/eval differ in the env stack (whole games), chosen in atari_utils.make_atari_env
    parser.set_defaults(**ATARI_DEFAULTS)


def atari_override_defaults(_env: str | None, parser: argparse.ArgumentParser) -> None:
    """Sample Factory 2's form of :func:`set_atari_defaults`: the env name first (the same defaults for every game)."""
    set_atari_defaults(parser)
