"""Train on any Gymnasium-registered env with an MLP policy.

python -m sf_examples.train_gym_env --env=CartPole-v1 --experiment=cartpole

Scripts written for Sample Factory 2 call ``register_custom_components()`` and ``parse_custom_args()`` from here,
and register ``make_gym_env_func`` under their own names; those names work the same way.
"""

from __future__ import annotations

import argparse
import sys

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.cfg.flags_extras import evaluation_flag
from sample_factory.envs.env_registry import global_env_registry
from sample_factory.train import run_rl
from sample_factory.utils.processes import exit_process
from sf_examples.gym.gym_utils import add_gym_env_args, gym_override_defaults, register_gym_env
from sf_examples.gym.gym_utils import make_gym_env_func as make_gym_env_func

DEFAULT_ENJOY_SCRIPT = "sf_examples.enjoy_gym_env"
# Gymnasium's classic-control tasks, registered by register_custom_components() whatever --env names
CLASSIC_CONTROL_IDS = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1")


def parse_gym_args(argv: list[str] | None = None, evaluation: bool = False):
    parser, partial_cfg = parse_sf_args(argv=argv, evaluation=evaluation)
    add_gym_env_args(partial_cfg.env, parser)
    gym_override_defaults(partial_cfg.env, parser)
    return parse_full_cfg(parser, argv)


def register_env_from_cfg(cfg) -> None:
    """The env named by ``--env`` becomes a registered env (any Gymnasium id, or ``module:EnvId``)."""
    if cfg.env is None:
        raise SystemExit("--env is required, e.g. --env=CartPole-v1")
    register_gym_env(cfg.env)


def register_custom_components(env_name: str | None = None) -> None:
    """Register Gymnasium's classic-control tasks and ``env_name`` (default: the ``--env`` of the command line).

    Any Gymnasium id (or ``module:EnvId``) works for ``env_name``; an unknown one raises ``UnknownEnvError`` with
    the closest ids. Call it before parsing, as Sample Factory 2 scripts do.
    """
    if env_name is None:
        pre = argparse.ArgumentParser(add_help=False)
        pre.add_argument("--env", default=None)
        env_name = pre.parse_known_args(sys.argv[1:])[0].env
    for env_id in (*CLASSIC_CONTROL_IDS, *([env_name] if env_name else [])):
        if global_env_registry().get(env_id) is not make_gym_env_func:  # calling twice changes nothing
            register_gym_env(env_id)


# Sample Factory 2's name for this script's parser: parse_custom_args(argv=None, evaluation=False) -> cfg
parse_custom_args = parse_gym_args


def main() -> int:
    cfg = parse_gym_args()
    from sample_factory.envs.env_utils import UnknownEnvError
    from sample_factory.utils.logging_setup import log

    try:
        register_env_from_cfg(cfg)
    except UnknownEnvError as exc:
        log.error("%s", exc)
        return 1
    status = run_rl(cfg)
    print_watch_hint(cfg)
    return status


def print_watch_hint(cfg) -> None:
    """Tell the user where the run lives and how to look at it (with ``enjoy_script`` when a script set one)."""
    import os

    from sample_factory.utils.logging_setup import log

    folder = os.path.join(cfg.train_dir, cfg.experiment)
    if not os.path.isdir(folder):
        return
    log.info(
        "Experiment: %s\n  watch it:     python -m %s --env=%s --experiment=%s --train_dir=%s\n"
        "  TensorBoard:  tensorboard --logdir=%s",
        folder,
        evaluation_flag(cfg, "enjoy_script") or DEFAULT_ENJOY_SCRIPT,
        cfg.env,
        cfg.experiment,
        cfg.train_dir,
        folder,
    )


if __name__ == "__main__":
    exit_process(main())  # sys.exit without the interpreter's module teardown (see exit_process)
