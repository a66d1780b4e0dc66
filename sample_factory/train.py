"""Training entry points of the public API: ``make_runner`` and ``run_rl``."""

from __future__ import annotations

from sample_factory.algo.utils.misc import ExperimentStatus
from sample_factory.cfg.experiment_files import prepare_experiment_dir, save_config
from sample_factory.cfg.validation import ConfigError
from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError
from sample_factory.utils.logging_setup import init_file_logger, log
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import experiment_dir


def make_runner(cfg: Config):
    """Apply ``--restart_behavior`` and validation, then pick the serial or parallel runner.

    Returns ``(cfg, runner)``: on resume ``cfg`` is the saved config with the explicit flags on top.
    Raises ConfigError with a message naming the flag and the fix.
    """
    cfg = prepare_experiment_dir(cfg)
    if cfg.serial_mode:
        from sample_factory.algo.runners.runner_serial import SerialRunner

        return cfg, SerialRunner(cfg)
    from sample_factory.algo.runners.runner_parallel import ParallelRunner

    return cfg, ParallelRunner(cfg)


def run_rl(cfg: Config) -> StatusCode:
    """The whole training run. Returns an ExperimentStatus code (also the process exit code)."""
    try:
        cfg, runner = make_runner(cfg)
    except (ConfigError, UnknownEnvError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    if cfg.log_to_file:
        init_file_logger(experiment_dir(cfg))
    save_config(cfg)
    log.info("Experiment folder: %s", experiment_dir(cfg))
    try:
        status = runner.init()
    except (ConfigError, UnknownEnvError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    if status == ExperimentStatus.SUCCESS:
        status = runner.run()
    return status
