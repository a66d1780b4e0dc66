"""doom_health_gathering_supreme with the paper's basic-scenario settings, four seeds."""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import BASIC_ENVS_CMD, train_command

_params = ParamGrid([("seed", seeds(4))])

_cmd = train_command(f"--env=doom_health_gathering_supreme {BASIC_ENVS_CMD}")

RUN_DESCRIPTION = RunDescription("doom_health_gathering", experiments=[Experiment("health_gathering", _cmd, _params)])
