"""doom_battle2 with the paper's APPO settings (4B env steps, 72 workers: a 36-core server with 4 GPUs)."""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import BATTLE_CMD, train_command

_params = ParamGrid([("seed", [0])])

_cmd = train_command(f"--env=doom_battle2 {BATTLE_CMD}")

RUN_DESCRIPTION = RunDescription("paper_doom_battle2_appo", experiments=[Experiment("battle2", _cmd, _params)])
