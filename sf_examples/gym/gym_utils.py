"""The Gymnasium env family: train on any id registered with Gymnasium.

``python -m sf_examples.train_gym_env --env=CartPole-v1`` calls :func:`register_gym_env` for the ``--env`` value,
then applies :func:`add_gym_env_args` and :func:`gym_override_defaults` to the parser. Ids of the form
``"module:EnvName-v0"`` import ``module`` first, so third-party packages can register their envs on import.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from sample_factory.cfg.validation import ConfigError
from sample_factory.envs.env_utils import UnknownEnvError, register_env
from sample_factory.envs.env_wrappers import (
    ActionRepeatWrapper,
    MaxAndSkipEnv,
    PixelFormatChwWrapper,
    RecordEpisodeStatistics,
    StackFramesWrapper,
)
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import log

# Defaults for small MLP tasks (classic control). Chosen to learn CartPole-v1 quickly with PPO; tune here.
GYM_DEFAULTS: dict[str, Any] = {
    # two small hidden layers are ample for low-dimensional state vectors and train fast on CPU
    "encoder_mlp_layers": [64, 64],
    # tanh keeps activations bounded, the usual choice for PPO on classic control
    "nonlinearity": "tanh",
    # states are fully observed (Markov), so a recurrent core only slows learning down
    "use_rnn": False,
    # short rollouts keep the policy lag small; episodes are long relative to 32 steps anyway
    "rollout": 32,
    "gamma": 0.99,
    # measured on CartPole-v1 (docs/benchmarks.md): four epochs over four minibatches of 256 per 1024-sample batch
    # at 1e-3 reached 490-500 in 200k steps on every seed tried; one epoch over one 1024 minibatch (the library
    # default) was far less reliable (160-470). The extra SGD is cheap next to sampling for such small networks.
    "learning_rate": 1e-3,
    "num_epochs": 4,
    "batch_size": 256,
    "num_batches_per_epoch": 4,
    # state features have very different scales (positions vs velocities)
    "normalize_input": True,
    # CartPole gives +1 per step: returns reach ~100 with gamma=0.99; scaling keeps value targets near 10
    "reward_scale": 0.1,
    # CartPole-v1's 500-step limit is a truncation, not a failure: without bootstrapping, the same state is worth
    # ~10 (reward-scaled) in the middle of an episode and ~0 at step 500, and once the policy reaches 500 these
    # conflicting targets make the reward dip late in training. Measured (docs/reliability.md): 400k-step runs
    # ended at 500 in 16 of 16 with it, and dipped as low as 309 without it.
    "value_bootstrap": True,
}


def _split_module(env_name: str) -> tuple[str | None, str]:
    """``"pkg.mod:Env-v0"`` -> ``("pkg.mod", "Env-v0")``; plain ids have no module."""
    module, sep, env_id = env_name.rpartition(":")
    return (module, env_id) if sep else (None, env_name)


def make_gym_env_func(
    full_env_name: str,
    cfg: Config | None = None,
    env_config: AttrDict | None = None,
    render_mode: str | None = None,
) -> gym.Env:
    """Create the Gymnasium env ``full_env_name`` and apply the env flags of ``cfg`` (see :func:`wrap_gym_env`)."""
    env = gym.make(full_env_name, render_mode=render_mode)
    return env if cfg is None else wrap_gym_env(env, cfg)


def wrap_gym_env(env: gym.Env, cfg: Config) -> gym.Env:
    """Make the standard env flags true for a Gymnasium env, in this order:

    - ``--env_frameskip`` > 1: repeat each action (:class:`MaxAndSkipEnv` for images, which also removes the
      flicker of Atari-like games; :class:`ActionRepeatWrapper` otherwise);
    - ``--pixel_format=CHW``: channels-last images (3-D Box, as Gymnasium envs give them) become CHW, the layout
      the conv encoders need; ``HWC`` leaves them as they are, for custom encoders;
    - ``--env_framestack`` > 1: stack the last frames along the channel axis (CHW or 2-D images only);
    - ``--use_record_episode_statistics``: episode reward and length in ``info["episode"]``.
    """
    frameskip = int(getattr(cfg, "env_frameskip", 1) or 1)
    if frameskip > 1:
        repeat = MaxAndSkipEnv if _is_image(env.observation_space) else ActionRepeatWrapper
        env = repeat(env, frameskip)
    if getattr(cfg, "pixel_format", "CHW") == "CHW" and _is_channels_last_image(env.observation_space):
        env = PixelFormatChwWrapper(env)
    framestack = int(getattr(cfg, "env_framestack", 1) or 1)
    if framestack > 1:
        _check_stackable(env.observation_space, cfg)
        env = StackFramesWrapper(env, framestack)
    if getattr(cfg, "use_record_episode_statistics", False):
        env = RecordEpisodeStatistics(env)
    return env


def _is_image(space: gym.Space) -> bool:
    return isinstance(space, spaces.Box) and len(space.shape) == 3


def _is_channels_last_image(space: gym.Space) -> bool:
    """A 3-D Box, unless it is plainly CHW already (a few channels first, many last: e.g. (3, 64, 64))."""
    if not _is_image(space):
        return False
    channels_first = space.shape[0] <= 4 < space.shape[-1]
    return not channels_first


def _check_stackable(space: gym.Space, cfg: Config) -> None:
    stack = f"--env_framestack={cfg.env_framestack}"
    if _is_image(space) and getattr(cfg, "pixel_format", "CHW") == "HWC" and _is_channels_last_image(space):
        raise ConfigError(
            f"{stack} stacks frames along the channel axis of CHW images, but --pixel_format=HWC keeps the env's "
            f"channels-last images {space.shape}: use --pixel_format=CHW or --env_framestack=1"
        )
    if not (isinstance(space, spaces.Box) and len(space.shape) in (2, 3)):
        raise ConfigError(
            f"{stack} needs image observations (a 2-D or 3-D Box), but --env={cfg.env} has {space}: pass "
            f"--env_framestack=1 (for memory over time use --use_rnn=True)"
        )


def register_gym_env(env_name: str) -> None:
    """Register the Gymnasium id ``env_name`` with Sample Factory, failing early with suggestions if it is unknown."""
    module, env_id = _split_module(env_name)
    if module is not None:
        _import_env_module(module, env_name)
    if env_id not in gym.envs.registry:
        raise UnknownEnvError(_unknown_gym_id_message(env_id))
    register_env(env_name, make_gym_env_func)


def _import_env_module(module: str, env_name: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise UnknownEnvError(
            f"--env={env_name}: cannot import module {module!r} that should register the env ({exc}); "
            f"install the package that provides it or fix the module name before ':'"
        ) from exc


def _unknown_gym_id_message(env_id: str) -> str:
    close = difflib.get_close_matches(env_id, list(gym.envs.registry), n=5, cutoff=0.6)
    suggestion = f" Did you mean: {', '.join(close)}?" if close else ""
    return (
        f"{env_id!r} is not a registered Gymnasium env id.{suggestion} "
        f"Envs from third-party packages need their package imported first: pass --env=<module>:<EnvId> "
        f"(e.g. --env=ale_py:ALE/Pong-v5). Custom envs can be registered with gymnasium.register(id=..., "
        f"entry_point=...) or with sample_factory.envs.env_utils.register_env(name, make_env_func)."
    )


def add_gym_env_args(env: str, parser: argparse.ArgumentParser) -> None:
    """Hook for Gymnasium-specific flags; none are needed yet, but the train/enjoy scripts call it."""
    del env, parser


def gym_override_defaults(env: str, parser: argparse.ArgumentParser) -> None:
    """Apply :data:`GYM_DEFAULTS` to the flags the parser declares.

    Flags the parser does not declare are skipped with a warning instead of being added silently, so a renamed
    flag shows up in the log rather than as a default that quietly stops applying.
    """
    declared = {action.dest for action in parser._actions}
    known = {key: value for key, value in GYM_DEFAULTS.items() if key in declared}
    unknown = sorted(set(GYM_DEFAULTS) - declared)
    if unknown:
        log.warning(
            "gym_override_defaults(%s): the parser has no flags %s; their defaults are not applied", env, unknown
        )
    parser.set_defaults(**known)
