"""doom_battle with 4 policies in population-based training (a smaller population than the paper's 8)."""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import BATTLE_CMD, train_command

_params = ParamGrid([("seed", [0])])

_cmd = train_command(f"--env=doom_battle {BATTLE_CMD} --num_policies=4 --with_pbt=True --pbt_period_env_steps=5000000")

RUN_DESCRIPTION = RunDescription(
    "doom_battle_d4_appo_pbt",
    experiments=[Experiment("battle_d4_pbt", _cmd, _params)],
    customize_experiment_name=False,
)
