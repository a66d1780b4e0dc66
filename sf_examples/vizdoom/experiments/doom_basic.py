"""doom_basic with the paper's basic-scenario settings, four seeds (Sample Factory 2's first VizDoom experiment).

python -m sample_factory.launcher.run --run=sf_examples.vizdoom.experiments.doom_basic --backend=processes \
    --max_parallel=1 --num_gpus=0
"""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import BASIC_ENVS_CMD, train_command

_params = ParamGrid([("seed", seeds(4))])

_cmd = train_command(f"--env=doom_basic {BASIC_ENVS_CMD}")

RUN_DESCRIPTION = RunDescription("doom_basic", experiments=[Experiment("basic", _cmd, _params)])
