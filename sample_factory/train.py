"""Training entry points of the public API: ``make_runner`` and ``run_rl``.

``run_rl(cfg)`` is exactly ``make_runner`` + ``runner.init()`` + ``runner.run()``, so a script that drives the
runner itself (to register observers between the calls) gets the same run: folders, config.json, logging.
``training_loop_specs`` composes the run's loops from the learning and sampling rooms below.
"""

from __future__ import annotations

from sample_factory.algo.learning.loop_specs import learner_loop_specs
from sample_factory.algo.runners.components import LoopSpec
from sample_factory.algo.runners.modes import runner_class
from sample_factory.algo.runners.rank_setup import join_ranks
from sample_factory.algo.runners.runner import Runner
from sample_factory.algo.sampling.loop_specs import evaluator_loop_specs, sampling_loop_specs
from sample_factory.cfg.experiment_files import prepare_experiment_dir
from sample_factory.cfg.validation import ConfigError
from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError
from sample_factory.utils.distributed import RankSetupError, this_rank
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode


def training_loop_specs(cfg: Config) -> list[LoopSpec]:
    """Every loop of a training run except the runner's: the learners first (so their weights are published early),
    then the sampling side's loops and the evaluator's (``--eval_every_env_steps``)."""
    return learner_loop_specs(cfg) + sampling_loop_specs(cfg) + evaluator_loop_specs(cfg)


def make_runner(cfg: Config) -> tuple[Config, Runner]:
    """Apply ``--restart_behavior`` and validation, then pick the serial or parallel runner.

    Returns ``(cfg, runner)``: on resume ``cfg`` is the saved config with the explicit flags on top. With
    ``--with_pbt=True`` the runner already has a :class:`PopulationBasedTraining` observer. Register
    observers (``runner.register_observer``) and stats handlers before ``runner.init()``; nothing has started yet.
    Raises ConfigError with a message naming the flag and the fix.

    When the environment names this process a rank of a distributed run (``RANK``, ``WORLD_SIZE`` > 1, ...: torchrun,
    Slurm), the rank first meets the others and takes rank 0's configuration (docs/distributed.md).
    """
    rank = this_rank()
    ranks = None
    if rank is None:
        cfg = prepare_experiment_dir(cfg)
    else:
        cfg, ranks = join_ranks(cfg, rank)
    runner = runner_class(cfg)(cfg, loop_specs=training_loop_specs)
    runner.ranks = ranks
    if cfg.with_pbt:
        from sample_factory.pbt.population_based_training import PopulationBasedTraining

        runner.register_observer(PopulationBasedTraining(cfg, runner))
    return cfg, runner


def run_rl(cfg: Config) -> StatusCode:
    """The whole training run. Returns an ExperimentStatus code (also the process exit code)."""
    try:
        cfg, runner = make_runner(cfg)
        status = runner.init()
    except (ConfigError, UnknownEnvError, MissingDependencyError, RankSetupError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    if status == ExperimentStatus.SUCCESS:
        status = runner.run()
    return status
