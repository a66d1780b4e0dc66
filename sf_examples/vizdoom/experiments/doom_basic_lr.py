"""doom_basic over three learning rates and two seeds (six runs of 500k frames, about 2 minutes each on 2 cores).

python -m sample_factory.launcher.run --run=sf_examples.vizdoom.experiments.doom_basic_lr --backend=processes \
    --max_parallel=1 --num_gpus=0
"""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription

_params = ParamGrid([("learning_rate", [1e-4, 3e-4, 1e-3]), ("seed", seeds(2))])

_cmd = (
    "python -m sf_examples.vizdoom.train_vizdoom --env=doom_basic --num_workers=2 --num_envs_per_worker=4 "
    "--train_for_env_steps=500000 --device=cpu"
)

RUN_DESCRIPTION = RunDescription("doom_basic_lr", experiments=[Experiment("doom_basic", _cmd, _params)])
