"""Train on any Gymnasium-registered env with an MLP policy.

python -m sf_examples.train_gym_env --env=CartPole-v1 --experiment=cartpole
"""

from __future__ import annotations

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.cfg.flags_extras import evaluation_flag
from sample_factory.train import run_rl
from sample_factory.utils.processes import exit_process
from sf_examples.gym.gym_utils import add_gym_env_args, gym_override_defaults, register_gym_env

DEFAULT_ENJOY_SCRIPT = "sf_examples.enjoy_gym_env"


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
