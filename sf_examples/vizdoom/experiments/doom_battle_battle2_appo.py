"""doom_battle and doom_battle2 side by side with the paper's APPO settings."""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import BATTLE_CMD, train_command

_params = ParamGrid([("env", ["doom_battle", "doom_battle2"]), ("seed", [0])])

_cmd = train_command(BATTLE_CMD)

RUN_DESCRIPTION = RunDescription("doom_battle_battle2_appo", experiments=[Experiment("battles", _cmd, _params)])
