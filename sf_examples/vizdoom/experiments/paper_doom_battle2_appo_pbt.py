"""doom_battle2 with the paper's settings and population-based training of 8 policies."""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import BATTLE_CMD, train_command

_params = ParamGrid([("seed", [0])])

_cmd = train_command(f"--env=doom_battle2 {BATTLE_CMD} --num_policies=8 --with_pbt=True --pbt_period_env_steps=5000000")

RUN_DESCRIPTION = RunDescription(
    "paper_doom_battle2_appo_pbt",
    experiments=[Experiment("battle2_pbt", _cmd, _params)],
    customize_experiment_name=False,
)
