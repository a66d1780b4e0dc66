"""The paper's six basic scenarios, each with three seeds (Sample Factory 2's doom_basic_envs experiment)."""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import BASIC_ENVS_CMD, train_command

BASIC_ENVS = [
    "doom_my_way_home", "doom_deadly_corridor", "doom_defend_the_center", "doom_defend_the_line",
    "doom_health_gathering", "doom_health_gathering_supreme",
]  # fmt: skip

_params = ParamGrid([("env", BASIC_ENVS), ("seed", seeds(3))])

_cmd = train_command(BASIC_ENVS_CMD)

RUN_DESCRIPTION = RunDescription("paper_doom_all_basic_envs", experiments=[Experiment("basic_envs", _cmd, _params)])
