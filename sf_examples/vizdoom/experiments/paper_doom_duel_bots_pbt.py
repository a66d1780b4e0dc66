"""doom_duel_bots: 8 policies in population-based training against a bot, the paper's settings."""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import DUEL_BOTS_CMD, train_command

_params = ParamGrid([("seed", [0])])

RUN_DESCRIPTION = RunDescription(
    "paper_doom_duel_bots_pbt", experiments=[Experiment("duel_bots", train_command(DUEL_BOTS_CMD), _params)],
    customize_experiment_name=False,
)  # fmt: skip
