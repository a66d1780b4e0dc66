"""Four Brax locomotion tasks with the family's (GPU-sized) defaults, two seeds each: 8 experiments of 100M steps.

python -m sample_factory.launcher.run --run=sf_examples.brax.experiments.brax_basic_envs --backend=processes \
    --max_parallel=1 --num_gpus=1
python -m sample_factory.launcher.run --run=sf_examples.brax.experiments.brax_basic_envs --backend=slurm \
    --slurm_gpus_per_job=1 --slurm_cpus_per_gpu=8

Each experiment is one process simulating --env_agents=2048 copies on the GPU (serial mode), so run one per GPU.
"""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription

# names of sf_examples.brax.brax_params.BRAX_ENVS, spelled out so that the launcher imports nothing of jax
ENVS = ["ant", "humanoid", "halfcheetah", "walker2d"]

_params = ParamGrid([("seed", seeds(2)), ("env", ENVS), ("use_rnn", [False]), ("num_epochs", [5])])

_cmd = "python -m sf_examples.brax.train_brax --train_for_env_steps=100000000 --device=gpu"

RUN_DESCRIPTION = RunDescription("brax_basic_envs", experiments=[Experiment("brax_basic", _cmd, _params)])
