"""Train on DeepMind Lab (``dmlab_*`` envs): one DMLab-30 level, or all 30 at once.

    python -m sf_examples.dmlab.train_dmlab --env=dmlab_30 --experiment=dmlab30
    python -m sf_examples.dmlab.train_dmlab --env=dmlab_rooms_watermaze --experiment=watermaze

DeepMind Lab is not on PyPI; without its ``deepmind_lab`` module every command fails at once, before any process
starts, with one line saying how to build it (docs/dmlab.md). Besides the usual statistics the run writes each
level's human-normalised score (``hns/<level>``) and their capped mean (``dmlab/mean_capped_hns``).
"""

from __future__ import annotations

from sample_factory.cfg.validation import ConfigError
from sample_factory.envs.env_utils import MissingDependencyError, unknown_env_message
from sample_factory.train import make_runner
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.processes import exit_process
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import log
from sf_examples.dmlab.dmlab_env import import_deepmind_lab
from sf_examples.dmlab.dmlab_params import DMLAB_ENVS, make_dmlab_env
from sf_examples.dmlab.dmlab_stats import register_dmlab_stats
from sf_examples.entry_points import FamilyFlags, register_family_envs
from sf_examples.families import DMLAB

# the hooks take the env name; without --env (default_env "") they add what every level shares
DMLAB_FLAGS = FamilyFlags.of(DMLAB, enjoy_script="sf_examples.dmlab.enjoy_dmlab", default_env="")


def register_dmlab_envs(env_name: str | None = None) -> None:
    """Register every ``dmlab_*`` name (``env_name``, passed by generic tools, makes no difference)."""
    del env_name
    register_family_envs(DMLAB_ENVS, make_dmlab_env)


def register_dmlab_family(env_name: str) -> None:
    """The family's hook for generic tools (eval, the throughput tool): a missing simulator fails here, in the
    main process, with the one-line build hint, instead of inside a worker."""
    import_deepmind_lab()
    register_dmlab_envs(env_name)


def parse_dmlab_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the DeepMind Lab flags and the defaults of ``--env``, then the strict final parse."""
    return DMLAB_FLAGS.parse(argv, evaluation)


def register_dmlab_components() -> None:
    """Sample Factory 2's registration entry point: every ``dmlab_*`` name (the encoder is chosen by flags, so
    there is no model to register). Needs no simulator; creating an env does."""
    register_dmlab_envs()


# Sample Factory 2's name for the same function: parse_dmlab_args(argv=None, evaluation=False) -> cfg
parse_dmlab_args = parse_dmlab_cfg


def check_can_run(cfg: Config) -> str | None:
    """Why the envs cannot be created (unknown name, no deepmind_lab), checked before any process starts."""
    if cfg.env not in DMLAB_ENVS:
        return unknown_env_message(str(cfg.env), sorted(DMLAB_ENVS))
    try:
        import_deepmind_lab()
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
    register_dmlab_envs()
    cfg = parse_dmlab_cfg()
    if not can_run(cfg):
        return ExperimentStatus.FAILURE
    try:
        cfg, runner = make_runner(cfg)
        register_dmlab_stats(runner)
        status = runner.init()
    except (ConfigError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return runner.run() if status == ExperimentStatus.SUCCESS else status


if __name__ == "__main__":
    exit_process(main())  # sys.exit without the interpreter's module teardown (see exit_process)
