"""Train on the MuJoCo family.

    python -m sf_examples.mujoco.train_mujoco --env=mujoco_halfcheetah --experiment=halfcheetah
    python -m sf_examples.mujoco.train_mujoco --env=mujoco_pendulum --train_for_env_steps=300000 --device=cpu

Envs: ``mujoco_ant``, ``mujoco_halfcheetah``, ``mujoco_hopper``, ``mujoco_humanoid``, ``mujoco_standup``,
``mujoco_doublependulum``, ``mujoco_pendulum``, ``mujoco_reacher``, ``mujoco_walker``, ``mujoco_pusher``,
``mujoco_swimmer``. See ``docs/mujoco.md``.
"""

from __future__ import annotations

import sys

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env, unknown_env_message
from sample_factory.train import run_rl
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import log
from sf_examples.mujoco.mujoco_params import add_mujoco_env_args, mujoco_override_defaults
from sf_examples.mujoco.mujoco_utils import MUJOCO_ENVS, make_mujoco_env

TRAIN_SCRIPT = "sf_examples.mujoco.train_mujoco"
ENJOY_SCRIPT = "sf_examples.mujoco.enjoy_mujoco"


def register_mujoco_components() -> None:
    """Every ``mujoco_*`` name creates its env through the same module-level factory (the default MLP model)."""
    for env_name in MUJOCO_ENVS:
        register_env(env_name, make_mujoco_env)


def parse_mujoco_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the family's flags and defaults, then the strict final parse."""
    parser, _ = parse_sf_args(argv=argv, evaluation=evaluation)
    add_mujoco_env_args(parser)
    mujoco_override_defaults(parser, evaluation=evaluation)
    if evaluation:
        parser.set_defaults(train_script=TRAIN_SCRIPT, enjoy_script=ENJOY_SCRIPT)
    return parse_full_cfg(parser, argv)


def check_env_name(cfg: Config) -> bool:
    """Fail early, naming the MuJoCo envs, before any process starts."""
    if cfg.env in MUJOCO_ENVS:
        return True
    log.error("%s", unknown_env_message(str(cfg.env), sorted(MUJOCO_ENVS)))
    return False


def main() -> StatusCode:
    register_mujoco_components()
    cfg = parse_mujoco_cfg()
    if not check_env_name(cfg):
        return 1
    return run_rl(cfg)


if __name__ == "__main__":
    sys.exit(main())
