"""Train on Brax's jax physics tasks, all copies of a task in one batched env.

    python -m sf_examples.brax.train_brax --env=ant --experiment=ant_brax
    python -m sf_examples.brax.train_brax --env=ant --experiment=ant_cpu --env_agents=64 --batch_size=1024 \
        --device=cpu --train_for_env_steps=500000

Envs: ``ant``, ``halfcheetah``, ``hopper``, ``humanoid``, ``humanoidstandup``, ``inverted_double_pendulum``,
``inverted_pendulum``, ``pusher``, ``reacher``, ``swimmer``, ``walker2d``. Needs ``pip install
"sample-factory[brax]"``; without jax and brax every script stops with one line saying so. See ``docs/brax.md``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable

from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError, unknown_env_message
from sample_factory.train import run_rl
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import log
from sf_examples.brax.brax_env import BraxEnv, jax_to_torch, require_brax, torch_to_jax
from sf_examples.brax.brax_params import (
    BRAX_ENVS,
    DEFAULT_BRAX_ENV,
    add_brax_env_args,
    brax_override_defaults,
)
from sf_examples.entry_points import FamilyFlags, register_family_envs

BRAX_FLAGS = FamilyFlags(
    add_brax_env_args,
    brax_override_defaults,
    train_script="sf_examples.brax.train_brax",
    enjoy_script="sf_examples.brax.enjoy_brax",
    default_env=DEFAULT_BRAX_ENV,
)


def _env_seed(cfg: Config | None, env_config: AttrDict | None) -> int | None:
    """A distinct seed per batch (``--seed`` spread by the env's ``env_id``); None without ``--seed``."""
    base = getattr(cfg, "seed", None) if cfg is not None else None
    if base is None:
        return None
    env_id = int(env_config.env_id) if env_config is not None and env_config.get("env_id", -1) >= 0 else 0
    return int(base) * 100_003 + env_id * 10_007


def make_brax_env(
    full_env_name: str, cfg: Config | None = None, _env_config: AttrDict | None = None, render_mode: str | None = None
) -> BraxEnv:
    """The factory registered under every Brax name: ``--env_agents`` copies of the task as one :class:`BraxEnv`."""
    envs = require_brax()
    backend = str(getattr(cfg, "brax_backend", "") or "")
    kwargs = {"backend": backend} if backend else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # brax's notice that it is in maintenance mode, on every env
            brax_env = envs.get_environment(full_env_name, **kwargs)
    except KeyError:
        raise UnknownEnvError(unknown_env_message(full_env_name, sorted(BRAX_ENVS))) from None
    return BraxEnv(
        brax_env,
        num_actors=int(getattr(cfg, "env_agents", 2048)),
        render_mode=render_mode,
        render_res=int(getattr(cfg, "brax_render_res", 200)),
        clamp_actions=bool(getattr(cfg, "clamp_actions", False)),
        clamp_rew_obs=bool(getattr(cfg, "clamp_rew_obs", False)),
        episode_length=int(getattr(cfg, "brax_episode_length", 1000)),
        seed=_env_seed(cfg, _env_config),
    )


def add_extra_params_func(parser: argparse.ArgumentParser) -> None:
    """Add the Brax flags (``--env_agents``, ``--brax_episode_length``, ``--brax_backend``, ``--clamp_actions``,
    ``--clamp_rew_obs``, ``--brax_render_res``) to ``parser``."""
    add_brax_env_args(None, parser)


def override_default_params_func(env: str | None, parser: argparse.ArgumentParser) -> None:
    """Set the Brax family's defaults (``BRAX_DEFAULTS`` in ``sf_examples.brax.brax_params``) on ``parser``."""
    brax_override_defaults(env, parser)


def register_brax_custom_components(evaluation: bool = False) -> None:
    """Register every Brax name with :func:`make_brax_env`; raises MissingDependencyError without jax/brax.

    ``evaluation`` changes nothing: watching builds the batch the run's config describes.
    """
    del evaluation
    require_brax()
    register_family_envs(BRAX_ENVS, make_brax_env)


def register_brax_family(env_name: str | None = None) -> None:
    """The registration hook of generic tools (which pass the env name first)."""
    del env_name
    register_brax_custom_components()


def parse_brax_cfg(evaluation: bool = False, argv: list[str] | None = None) -> Config:
    """Standard flags, the Brax flags and defaults, then the strict final parse (works without jax/brax)."""
    return BRAX_FLAGS.parse(argv, evaluation)


def run_brax(evaluation: bool, run_config: Callable[[Config], StatusCode], argv: list[str] | None = None) -> StatusCode:
    """A script's ``main``: parse, check the env name and the packages, register, then ``run_config(cfg)``.

    A wrong name or missing jax/brax ends here with one error line, before any process starts.
    """
    cfg = parse_brax_cfg(evaluation=evaluation, argv=argv)
    try:
        if cfg.env not in BRAX_ENVS:
            raise UnknownEnvError(unknown_env_message(str(cfg.env), sorted(BRAX_ENVS)))
        register_brax_custom_components(evaluation)
    except (MissingDependencyError, UnknownEnvError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return run_config(cfg)


def main() -> StatusCode:
    return run_brax(False, run_rl)


__all__ = [
    "BraxEnv",
    "add_extra_params_func",
    "jax_to_torch",
    "main",
    "make_brax_env",
    "override_default_params_func",
    "parse_brax_cfg",
    "register_brax_custom_components",
    "register_brax_family",
    "torch_to_jax",
]

if __name__ == "__main__":
    sys.exit(main())
