"""Flags of the model (encoder, core, decoder, action heads) and the env settings every family shares."""

from __future__ import annotations

import argparse

from sample_factory.utils.utils import str2bool

ArgParser = argparse.ArgumentParser


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
    g.add_argument(
        "--action_head",
        type=str,
        default="factorized",
        choices=["factorized", "autoregressive"],
        help="Policy head of Tuple and MultiDiscrete actions: factorized draws every sub-action independently; "
        "autoregressive draws sub-action k given the sub-actions before it, for tasks whose sub-actions must agree "
        "(see docs/action_distributions.md).",
    )
    g.add_argument(
        "--action_distribution",
        type=str,
        default="default",
        help="default: the action space's built-in distribution (or the one registered for its type); another name "
        "selects a distribution registered under that name with global_model_factory().register_action_distribution "
        "(see docs/action_distributions.md).",
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
        help="Meant for GPU simulators: keep GPU observations on the GPU. In this version observations are always "
        "copied into the CPU trajectory buffers whatever this is (there are no GPU-resident trajectory buffers yet).",
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
