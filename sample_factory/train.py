"""Training entry points of the public API: ``make_runner`` and ``run_rl``."""

from __future__ import annotations

import os

from sample_factory.algo.utils.misc import ExperimentStatus
from sample_factory.cfg.experiment_files import prepare_experiment_dir, save_config
from sample_factory.cfg.validation import ConfigError
from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError
from sample_factory.utils.logging_setup import init_file_logger, log
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import experiment_dir


def make_runner(cfg: Config, learner_specs=None):
    """Apply ``--restart_behavior`` and validation, then pick the serial or parallel runner.

    Returns ``(cfg, runner)``: on resume ``cfg`` is the saved config with the explicit flags on top.
    Raises ConfigError with a message naming the flag and the fix.
    """
    cfg = prepare_experiment_dir(cfg)
    if cfg.serial_mode:
        from sample_factory.algo.runners.runner_serial import SerialRunner

        return cfg, SerialRunner(cfg, learner_specs)
    from sample_factory.algo.runners.runner_parallel import ParallelRunner

    return cfg, ParallelRunner(cfg, learner_specs)


def _already_finished(cfg: Config) -> bool:
    """A resumed experiment whose ``done`` marker already covers ``--train_for_env_steps`` has nothing to do."""
    marker = os.path.join(experiment_dir(cfg, mkdir=False), "done")
    if cfg.restart_behavior != "resume" or not os.path.isfile(marker):
        return False
    with open(marker) as f:
        text = f.read().strip()
    done_steps = int(text) if text.isdigit() else 0
    if done_steps < cfg.train_for_env_steps:
        os.remove(marker)  # the target was raised: keep training
        return False
    log.info(
        "Experiment %s already finished (%d env steps >= --train_for_env_steps=%d). Raise --train_for_env_steps to "
        "continue it, or pass --restart_behavior=restart to start a new one (the old folder is moved aside).",
        experiment_dir(cfg, mkdir=False),
        done_steps,
        cfg.train_for_env_steps,
    )
    return True


def run_rl(cfg: Config) -> StatusCode:
    """The whole training run. Returns an ExperimentStatus code (also the process exit code)."""
    try:
        cfg, runner = make_runner(cfg)
    except (ConfigError, UnknownEnvError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    if cfg.log_to_file:
        init_file_logger(experiment_dir(cfg))
    if _already_finished(cfg):
        return ExperimentStatus.SUCCESS
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
