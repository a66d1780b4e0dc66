"""doom_battle with the paper's settings and population-based training of 8 policies."""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import BATTLE_CMD, train_command

_params = ParamGrid([("seed", [0])])

_cmd = train_command(f"--env=doom_battle {BATTLE_CMD} --num_policies=8 --with_pbt=True --pbt_period_env_steps=5000000")

RUN_DESCRIPTION = RunDescription(
    "paper_doom_battle_appo_pbt",
    experiments=[Experiment("battle_pbt", _cmd, _params)],
    customize_experiment_name=False,
)
