"""Every MuJoCo env of the family with three seeds each: the family's defaults across all tasks (33 experiments).

python -m sample_factory.launcher.run --run=sf_examples.mujoco.experiments.mujoco_all_envs --backend=processes \
    --max_parallel=4 --num_gpus=0
python -m sample_factory.launcher.run --run=sf_examples.mujoco.experiments.mujoco_all_envs --backend=slurm \
    --slurm_gpus_per_job=0 --slurm_cpus_per_gpu=8
"""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription

# the family's names (sf_examples.mujoco.mujoco_utils.MUJOCO_ENVS), spelled out so the launcher imports no simulator
ENVS = [
    "mujoco_ant", "mujoco_doublependulum", "mujoco_halfcheetah", "mujoco_hopper", "mujoco_humanoid",
    "mujoco_pendulum", "mujoco_pusher", "mujoco_reacher", "mujoco_standup", "mujoco_swimmer", "mujoco_walker",
]  # fmt: skip

_params = ParamGrid([("env", ENVS), ("seed", seeds(3))])

_cmd = "python -m sf_examples.mujoco.train_mujoco --train_for_env_steps=10000000 --num_workers=8 --device=cpu"

RUN_DESCRIPTION = RunDescription("mujoco_all_envs", experiments=[Experiment("mujoco", _cmd, _params)])
