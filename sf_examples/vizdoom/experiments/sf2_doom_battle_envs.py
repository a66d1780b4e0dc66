"""doom_battle and doom_battle2 with the paper's settings plus input normalisation, three seeds each."""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import BATTLE_CMD, train_command

_params = ParamGrid([("env", ["doom_battle", "doom_battle2"]), ("seed", seeds(3))])

_cmd = train_command(f"{BATTLE_CMD} --normalize_input=True")

RUN_DESCRIPTION = RunDescription("sf2_doom_battle_envs", experiments=[Experiment("battle_envs", _cmd, _params)])
