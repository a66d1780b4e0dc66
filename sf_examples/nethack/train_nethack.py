"""Train on NetHack (``nethack_*`` envs, the NetHack Learning Environment).

    python -m sf_examples.nethack.train_nethack --env=nethack_challenge --experiment=nethack_monk
    python -m sf_examples.nethack.train_nethack --env=nethack_score --model=ScaledNet --experiment=score

Envs: ``nethack_staircase``, ``nethack_score``, ``nethack_pet``, ``nethack_oracle``, ``nethack_gold``,
``nethack_eat``, ``nethack_scout``, ``nethack_challenge``. Needs ``nle`` (``pip install "sample-factory[nethack]"``):
without it every command fails at once, before any process starts, with that install command.
"""

from __future__ import annotations

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.envs.env_utils import MissingDependencyError, unknown_env_message
from sample_factory.model.encoder import Encoder
from sample_factory.train import run_rl
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.processes import exit_process
from sample_factory.utils.typing import Config, ObsSpace, StatusCode
from sample_factory.utils.utils import log
from sf_examples.entry_points import FamilyFlags, register_family_envs
from sf_examples.nethack.models import MODELS
from sf_examples.nethack.nethack_env import NETHACK_ENVS, import_nle, make_nethack_env
from sf_examples.nethack.nethack_params import add_nethack_env_args, nethack_override_defaults

NETHACK_FLAGS = FamilyFlags(
    add_args=add_nethack_env_args,
    override_defaults=nethack_override_defaults,
    train_script="sf_examples.nethack.train_nethack",
    enjoy_script="sf_examples.nethack.enjoy_nethack",
    default_env="nethack_challenge",
)


def make_nethack_encoder(cfg: Config, obs_space: ObsSpace) -> Encoder:
    """The encoder ``--model`` names (``ChaoticDwarvenGPT5`` or ``ScaledNet``)."""
    model = MODELS.get(cfg.model)
    if model is None:
        raise ValueError(f"Unknown --model={cfg.model!r} for the NetHack envs; choose one of {sorted(MODELS)}")
    return model(cfg, obs_space)


def register_nethack_envs() -> None:
    """Every ``nethack_*`` name creates its env through ``make_nethack_env``."""
    register_family_envs(NETHACK_ENVS, make_nethack_env)


def register_nethack_components() -> None:
    """The family's envs and its encoder factory. Needs no ``nle``; creating an env does."""
    register_nethack_envs()
    global_model_factory().register_encoder_factory(make_nethack_encoder)


def register_nethack_family(env_name: str) -> None:
    """The family's hook for generic tools (eval, the throughput tool): without ``nle`` it fails here, in the main
    process, with the install command."""
    del env_name  # every name is registered
    import_nle()
    register_nethack_components()


def parse_nethack_args(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the NetHack flags and defaults, then the strict final parse."""
    return NETHACK_FLAGS.parse(argv, evaluation)


def check_can_run(cfg: Config) -> str | None:
    """Why the run cannot start (an unknown env name, no ``nle``), checked before any process starts."""
    if cfg.env not in NETHACK_ENVS:
        return unknown_env_message(str(cfg.env), sorted(NETHACK_ENVS))
    try:
        import_nle()
    except MissingDependencyError as exc:
        return str(exc)
    return None


def can_run(cfg: Config) -> bool:
    """:func:`check_can_run` with its answer logged as one error line."""
    problem = check_can_run(cfg)
    if problem:
        log.error("%s", problem)
    return not problem


def main() -> StatusCode:
    register_nethack_components()
    cfg = parse_nethack_args()
    if not can_run(cfg):
        return ExperimentStatus.FAILURE
    return run_rl(cfg)


if __name__ == "__main__":
    exit_process(main())  # sys.exit without the interpreter's module teardown (see exit_process)
