"""The EnvPool Atari envs (``envpool_atari_<game>``, the 57 games of the Atari-57 benchmark) and their defaults."""

from __future__ import annotations

import argparse
from typing import Any

from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sf_examples.envpool.envpool_utils import BATCHED_DEFAULTS, make_batched_env
from sf_examples.envpool.envpool_wrappers import EnvPoolBatchedEnv

PREFIX = "envpool_atari_"
# EnvPool/ALE game ids of the Atari-57 benchmark
ATARI_57 = (
    "Alien Amidar Assault Asterix Asteroids Atlantis BankHeist BattleZone BeamRider Berzerk Bowling Boxing Breakout "
    "Centipede ChopperCommand CrazyClimber Defender DemonAttack DoubleDunk Enduro FishingDerby Freeway Frostbite "
    "Gopher Gravitar Hero IceHockey Jamesbond Kangaroo Krull KungFuMaster MontezumaRevenge MsPacman NameThisGame "
    "Phoenix Pitfall Pong PrivateEye Qbert Riverraid RoadRunner Robotank Seaquest Skiing Solaris SpaceInvaders "
    "StarGunner Surround Tennis TimePilot Tutankham UpNDown Venture VideoPinball WizardOfWor YarsRevenge Zaxxon"
).split()
_SHORT_NAMES = {"MontezumaRevenge": "montezuma"}  # Sample Factory 2's name for it
# env name -> EnvPool task id
ENVPOOL_ATARI_ENVS: dict[str, str] = {PREFIX + _SHORT_NAMES.get(game, game.lower()): f"{game}-v5" for game in ATARI_57}
# the games every test trains on (the others are created and stepped)
STANDARD_GAMES = ("breakout", "pong", "beamrider", "qbert", "spaceinvaders", "seaquest", "montezuma")

# Preprocessing done by EnvPool in C++: up to 30 no-op starts, frame skip 4 with max-pooling of the last two
# frames, 84x84 grayscale, 4 stacked frames, episodes capped at 108k frames. Rewards are clipped to [-1, 1] for
# training; reported scores are the unclipped game scores. A lost life does not end the episode: the sampler
# reports each finished episode as a whole game (see docs/envpool.md).
ENVPOOL_ATARI_TASK_KWARGS: dict[str, Any] = {
    "noop_max": 30,
    "frame_skip": 4,
    "stack_num": 4,
    "img_height": 84,
    "img_width": 84,
    "gray_scale": True,
    "reward_clip": True,
    "episodic_life": False,
    "repeat_action_probability": 0.0,
}

# PPO settings from the Atari literature (Schulman et al. 2017; the CleanRL/EnvPool PPO baselines)
ENVPOOL_ATARI_DEFAULTS: dict[str, Any] = {
    **BATCHED_DEFAULTS,
    "env_frameskip": 4,  # EnvPool skips frames itself; this makes FPS and --train_for_env_steps count frames
    "num_workers": 2,
    "env_agents": 64,
    "rollout": 32,
    "batch_size": 1024,  # minibatch; 2 workers x 64 envs x 32 steps = 4096 samples = 4 minibatches
    "num_batches_per_epoch": 4,
    "num_epochs": 4,
    "learning_rate": 2.5e-4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "ppo_clip_ratio": 0.1,
    "value_loss_coeff": 0.5,
    "exploration_loss_coeff": 0.01,
    "max_grad_norm": 0.5,
    "encoder_conv_architecture": "convnet_atari",
    "obs_scale": 255.0,
    "normalize_input": False,
    "normalize_returns": False,  # clipped rewards already keep value targets small
    "use_rnn": False,  # 4 stacked frames carry the motion
}


def envpool_atari_override_defaults(env_name: str, parser: argparse.ArgumentParser) -> None:
    del env_name
    parser.set_defaults(**ENVPOOL_ATARI_DEFAULTS)


def make_envpool_atari_env(
    full_env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> EnvPoolBatchedEnv:
    """One EnvPool instance of ``--env_agents`` copies of the game; frames of env 0 with ``render_mode="rgb_array"``."""
    return make_batched_env(
        ENVPOOL_ATARI_ENVS[full_env_name], cfg, env_config, render_mode, **ENVPOOL_ATARI_TASK_KWARGS
    )
