"""Flags of the NetHack family and the defaults it sets on Sample Factory's own flags.

Three groups, as in Sample Factory 2: the env (:func:`add_extra_params_nethack_env`), the model
(:func:`add_extra_params_model`) and run labels (:func:`add_extra_params_general`). :func:`add_nethack_env_args`
adds all three; it and :func:`nethack_override_defaults` take the env name first, as the family's hooks do.
"""

from __future__ import annotations

import argparse
from typing import Any

from sample_factory.utils.utils import str2bool

# Sample Factory 2's NetHack settings (those of its published nethack_challenge runs, after Dungeons and Data's
# APPO baseline): 16 workers x 32 envs in two splits, 32-step rollouts, one epoch over 4096-sample batches, no
# V-trace, gamma 0.999, GAE lambda 1, clip 0.1, entropy 0.001, Adam at 1e-4 (eps 1e-7), rewards clipped at 10.
NETHACK_DEFAULTS: dict[str, Any] = {
    "num_workers": 16,
    "num_envs_per_worker": 32,
    "worker_num_splits": 2,
    "rollout": 32,
    "recurrence": 32,
    "batch_size": 4096,
    "num_batches_per_epoch": 1,
    "num_epochs": 1,
    "shuffle_minibatches": False,
    "async_rl": True,
    "serial_mode": False,
    "gamma": 0.999,
    "gae_lambda": 1.0,
    "reward_scale": 1.0,
    "reward_clip": 10.0,
    "value_bootstrap": False,
    "normalize_returns": True,
    "exploration_loss_coeff": 0.001,
    "value_loss_coeff": 1.0,
    "ppo_clip_ratio": 0.1,
    "with_vtrace": False,
    "learning_rate": 0.0001,
    "adam_eps": 1e-7,
    "max_grad_norm": 4.0,
    # the models embed character codes and colours: observations reach them as they are (no running mean/std),
    # except screen_image, whose pixels are scaled to [0, 1]
    "normalize_input": False,
    "obs_scale": 255.0,
    "use_rnn": True,
    "rnn_type": "lstm",
    "rnn_size": 512,
}


def add_extra_params_nethack_env(parser: argparse.ArgumentParser) -> None:
    """The env's flags (saved in config.json, so enjoy and eval rebuild the same game)."""
    p = parser.add_argument_group("NetHack env", "Flags of the nethack_* envs.")
    p.add_argument(
        "--character",
        type=str,
        default="mon-hum-neu-mal",
        help="role-race-alignment-gender, e.g. mon-hum-neu-mal (a human monk), val-dwa-law-fem; '@' picks at random",
    )
    p.add_argument("--max_episode_steps", type=int, default=100000, help="Agent steps after which an episode ends.")
    p.add_argument("--penalty_step", type=float, default=0.0, help="Reward per step that leaves the game clock still.")
    p.add_argument("--penalty_time", type=float, default=0.0, help="Penalty weight of the time the clock stood still.")
    p.add_argument(
        "--fn_penalty_step",
        type=str,
        default="constant",
        choices=["constant", "exp", "square", "linear", "always"],
        help="How the idle-step penalty grows with the number of idle steps (NLE's penalty_mode).",
    )
    p.add_argument("--savedir", type=str, default=None, help="Folder for NLE's game recordings (ttyrecs).")
    p.add_argument(
        "--save_ttyrec_every", type=int, default=0, help="Record every Nth episode into --savedir (0: never)."
    )
    p.add_argument(
        "--add_image_observation",
        type=str2bool,
        default=True,
        help="Add screen_image: a picture of the --crop_dim cells around the agent (ChaoticDwarvenGPT5 needs it).",
    )
    p.add_argument("--crop_dim", type=int, default=18, help="Cells per side of the crop around the agent.")
    p.add_argument("--pixel_size", type=int, default=6, help="Pixels per cell side in screen_image.")
    p.add_argument(
        "--use_prev_action", type=str2bool, default=True, help="Give the model the previous action (prev_actions)."
    )
    p.add_argument(
        "--no_progress_timeout",
        type=int,
        default=150,
        help="End an episode after this many steps without the game clock advancing (stuck in menus); 0: never.",
    )


def add_extra_params_model(parser: argparse.ArgumentParser) -> None:
    """The model's flags: which encoder (``--model``) and its sizes."""
    from sf_examples.nethack.models import MODELS

    p = parser.add_argument_group("NetHack model", "Flags of the NetHack encoders (sf_examples/nethack/models).")
    p.add_argument("--model", type=str, default="ChaoticDwarvenGPT5", choices=sorted(MODELS), help="The encoder.")
    p.add_argument("--h_dim", type=int, default=512, help="Width of the encoder's output layer.")
    p.add_argument("--msg_hdim", type=int, default=64, help="ScaledNet: width of the message-line encoder.")
    p.add_argument("--color_edim", type=int, default=16, help="ScaledNet: colour embedding size.")
    p.add_argument("--char_edim", type=int, default=16, help="ScaledNet: character embedding size.")
    p.add_argument("--use_crop", type=str2bool, default=True, help="ScaledNet: also encode the cells around the agent.")
    p.add_argument("--use_crop_norm", type=str2bool, default=True, help="ScaledNet: layer-normalise the crop features.")
    p.add_argument("--screen_kernel_size", type=int, default=3, help="ScaledNet: convolution kernel size.")
    p.add_argument("--no_max_pool", type=str2bool, default=False, help="ScaledNet: no max-pooling between stages.")
    p.add_argument("--screen_conv_blocks", type=int, default=3, help="ScaledNet: convolution stages.")
    p.add_argument("--blstats_hdim", type=int, default=512, help="ScaledNet: width of the status-lines encoder.")
    p.add_argument("--fc_after_cnn_hdim", type=int, default=512, help="ScaledNet: width after each grid encoder.")
    p.add_argument("--use_resnet", type=str2bool, default=False, help="ScaledNet: residual blocks in each stage.")
    p.add_argument("--scale_cnn_channels", type=int, default=1, help="ScaledNet: multiplier of conv channels.")
    p.add_argument("--num_fc_layers", type=int, default=2, help="ScaledNet: dense layers after each grid encoder.")
    p.add_argument("--num_res_blocks", type=int, default=2, help="ScaledNet: residual blocks per stage.")
    p.add_argument("--num_res_layers", type=int, default=2, help="ScaledNet: convolutions per residual block.")
    p.add_argument("--obs_frame_stack", type=int, default=1, help="ScaledNet: grids stacked per input (1: none).")
    p.add_argument(
        "--use_inverse_model",
        type=str2bool,
        default=False,
        help="ChaoticDwarvenGPT5: attach an inverse-dynamics head (encoder.inverse_model; its loss is not added).",
    )


def add_extra_params_general(parser: argparse.ArgumentParser) -> None:
    """Labels of a run, saved in its config.json for grouping runs in experiment trackers."""
    p = parser.add_argument_group("Run labels", "Free-form labels of the run.")
    p.add_argument("--exp_tags", type=str, default="local", help="Comma-separated tags of the run.")
    p.add_argument("--exp_point", type=str, default="point-A", help="Name of the experiment point (configuration).")
    p.add_argument("--group", type=str, default="group2", help="Name of the group of runs.")


def add_nethack_env_args(_env: str | None, parser: argparse.ArgumentParser) -> None:
    """All the family's flags (the family's ``add_args`` hook; the same for every env name)."""
    add_extra_params_nethack_env(parser)
    add_extra_params_model(parser)
    add_extra_params_general(parser)


def nethack_override_defaults(_env: str | None, parser: argparse.ArgumentParser) -> None:
    """The family's defaults (``NETHACK_DEFAULTS``), the same for every env and for training and evaluation."""
    parser.set_defaults(**NETHACK_DEFAULTS)
