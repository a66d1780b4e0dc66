"""A small sweep to try the launcher with: 2 seeds x 2 learning rates of a short CartPole-v1 run (20k env steps).

python -m sample_factory.launcher.run --run=sf_examples.gym.experiments.cartpole_lr_sweep --backend=processes \
    --max_parallel=2 --pause_between=0 --num_gpus=0
"""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription

_params = ParamGrid([("seed", seeds(2)), ("learning_rate", [1e-4, 1e-3])])

_cmd = (
    "python -m sf_examples.train_gym_env --env=CartPole-v1 --num_workers=1 --num_envs_per_worker=4 "
    "--train_for_env_steps=20000 --device=cpu"
)

RUN_DESCRIPTION = RunDescription("cartpole_lr_sweep", experiments=[Experiment("cartpole", _cmd, _params)])
