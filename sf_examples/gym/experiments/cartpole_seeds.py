"""CartPole-v1 with four seeds: how much one configuration's result varies from seed to seed.

python -m sample_factory.launcher.run --run=sf_examples.gym.experiments.cartpole_seeds --backend=processes \
    --max_parallel=2 --num_gpus=0
"""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription

_params = ParamGrid([("seed", seeds(4))])

_cmd = (
    "python -m sf_examples.train_gym_env --env=CartPole-v1 --num_workers=2 --num_envs_per_worker=8 "
    "--train_for_env_steps=300000 --device=cpu"
)

RUN_DESCRIPTION = RunDescription("cartpole_seeds", experiments=[Experiment("cartpole", _cmd, _params)])
