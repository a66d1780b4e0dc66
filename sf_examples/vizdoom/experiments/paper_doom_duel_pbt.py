"""Self-play: doom_duel and doom_deathmatch_full, 8 policies in population-based training, the paper's settings."""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import SELFPLAY_CMD, train_command

_params = ParamGrid([("seed", [0])])

_duel = train_command(
    f"--env=doom_duel {SELFPLAY_CMD} --pbt_replace_reward_gap=0.5 --pbt_replace_reward_gap_absolute=0.35"
)
_deathmatch = train_command(
    f"--env=doom_deathmatch_full {SELFPLAY_CMD} --pbt_replace_reward_gap=0.1 --pbt_replace_reward_gap_absolute=0.1"
)

RUN_DESCRIPTION = RunDescription(
    "paper_doom_duel_pbt",
    experiments=[Experiment("duel_full", _duel, _params), Experiment("deathmatch_full", _deathmatch, _params)],
    customize_experiment_name=False,
)
