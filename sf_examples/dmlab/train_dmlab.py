"""Train on DeepMind Lab (``dmlab_*`` envs): one DMLab-30 level, or all 30 at once.

    python -m sf_examples.dmlab.train_dmlab --env=dmlab_30 --experiment=dmlab30
    python -m sf_examples.dmlab.train_dmlab --env=dmlab_rooms_watermaze --experiment=watermaze

DeepMind Lab is not on PyPI; without its ``deepmind_lab`` module every command fails at once, before any process
starts, with one line saying how to build it (docs/dmlab.md). Besides the usual statistics the run writes each
level's human-normalised score (``hns/<level>``) and their capped mean (``dmlab/mean_capped_hns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sample_factory.algo.runners.runner import AlgoObserver, Runner
from sample_factory.algo.utils.context import global_model_factory
from sample_factory.cfg.validation import ConfigError
from sample_factory.envs.env_utils import MissingDependencyError, unknown_env_message
from sample_factory.train import make_runner
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.paths import experiment_dir
from sample_factory.utils.processes import exit_process
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import log
from sf_examples.dmlab.dmlab_env import dmlab_extra_summaries, import_deepmind_lab, list_all_levels_for_experiment
from sf_examples.dmlab.dmlab_level_cache import DmlabLevelCache, make_dmlab_caches
from sf_examples.dmlab.dmlab_model import make_dmlab_encoder
from sf_examples.dmlab.dmlab_params import DMLAB_ENVS, make_dmlab_env
from sf_examples.dmlab.dmlab_stats import register_dmlab_stats
from sf_examples.entry_points import FamilyFlags, register_family_envs
from sf_examples.families import DMLAB

DMLAB_FLAGS = FamilyFlags.of(DMLAB, enjoy_script="sf_examples.dmlab.enjoy_dmlab")


class DmlabEnvWithCache:
    """A ``make_env_func`` that gives every env the level caches of the run's policies (picklable by value)."""

    def __init__(self, level_caches: Sequence[DmlabLevelCache] | None = None) -> None:
        self.level_caches = list(level_caches) if level_caches else None

    def __call__(self, env_name: str, cfg: Config | None = None, env_config: Any = None, render_mode: Any = None):
        return make_dmlab_env(env_name, cfg, env_config, render_mode, self.level_caches)


def register_dmlab_envs(level_caches: Sequence[DmlabLevelCache] | None = None) -> None:
    """Register every ``dmlab_*`` name; with ``level_caches`` (one per policy) envs start on cached maps."""
    register_family_envs(DMLAB_ENVS, DmlabEnvWithCache(level_caches) if level_caches else make_dmlab_env)


def register_dmlab_family(env_name: str | None = None) -> None:
    """The family's hook for generic tools (eval, the throughput tool): a missing simulator fails here, in the
    main process, with the one-line build hint, instead of inside a worker."""
    del env_name  # every name is registered
    import_deepmind_lab()
    register_dmlab_envs()
    global_model_factory().register_encoder_factory(make_dmlab_encoder)


def parse_dmlab_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the DeepMind Lab flags and the defaults of ``--env``, then the strict final parse."""
    return DMLAB_FLAGS.parse(argv, evaluation)


def register_dmlab_components(level_caches: Sequence[DmlabLevelCache] | None = None) -> None:
    """Every ``dmlab_*`` name and the encoder (conv net, plus word embeddings for instructions). Needs no
    simulator; creating an env does."""
    register_dmlab_envs(level_caches)
    global_model_factory().register_encoder_factory(make_dmlab_encoder)


def initialize_level_cache(cfg: Config, mp_ctx: Any = None) -> list[DmlabLevelCache] | None:
    """One level-cache view per policy over ``--dmlab_level_cache_path``; None when the cache is off (empty path)."""
    if not getattr(cfg, "dmlab_level_cache_path", ""):
        return None
    levels = list_all_levels_for_experiment(cfg.env)
    return make_dmlab_caches(experiment_dir(cfg), levels, cfg.num_policies, cfg.dmlab_level_cache_path, mp_ctx)


class DmlabExtraSummariesObserver(AlgoObserver):
    """Writes the capped mean human-normalised score from the statistics of whichever runner it observes."""

    def extra_summaries(self, runner: Runner, policy_id: int, env_steps: int, writer: Any) -> None:
        dmlab_extra_summaries(runner, policy_id, env_steps, writer)


def register_msg_handlers(cfg: Config, runner: Runner) -> None:
    """Hook the per-level human-normalised scores onto ``runner`` (before ``runner.init()``)."""
    del cfg
    register_dmlab_stats(runner)


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
    register_dmlab_components()
    cfg = parse_dmlab_cfg()
    if not can_run(cfg):
        return ExperimentStatus.FAILURE
    try:
        register_dmlab_components(initialize_level_cache(cfg))
        cfg, runner = make_runner(cfg)
        register_msg_handlers(cfg, runner)
        status = runner.init()
    except (ConfigError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return runner.run() if status == ExperimentStatus.SUCCESS else status


if __name__ == "__main__":
    exit_process(main())  # sys.exit without the interpreter's module teardown (see exit_process)
