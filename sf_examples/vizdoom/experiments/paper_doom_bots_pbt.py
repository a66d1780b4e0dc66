"""doom_deathmatch_bots: 8 policies in population-based training against 7 bots, the paper's settings."""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import DEATHMATCH_BOTS_CMD, train_command

_params = ParamGrid([("seed", [0])])

RUN_DESCRIPTION = RunDescription(
    "paper_doom_bots_pbt", experiments=[Experiment("deathmatch_bots", train_command(DEATHMATCH_BOTS_CMD), _params)],
    customize_experiment_name=False,
)  # fmt: skip
