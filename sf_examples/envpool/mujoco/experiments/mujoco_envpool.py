"""Every EnvPool MuJoCo task with three seeds: the family's defaults across all tasks (33 experiments).

python -m sample_factory.launcher.run --run=sf_examples.envpool.mujoco.experiments.mujoco_envpool \
    --backend=processes --max_parallel=4 --num_gpus=0
"""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription

# the family's names (ENVPOOL_MUJOCO_ENVS), spelled out so the launcher imports neither envpool nor MuJoCo
ENVS = [
    "envpool_mujoco_ant", "envpool_mujoco_doublependulum", "envpool_mujoco_halfcheetah", "envpool_mujoco_hopper",
    "envpool_mujoco_humanoid", "envpool_mujoco_pendulum", "envpool_mujoco_pusher", "envpool_mujoco_reacher",
    "envpool_mujoco_standup", "envpool_mujoco_swimmer", "envpool_mujoco_walker",
]  # fmt: skip

_params = ParamGrid([("env", ENVS), ("seed", seeds(3))])

_cmd = "python -m sf_examples.envpool.mujoco.train_envpool_mujoco --train_for_env_steps=10000000 --device=cpu"

RUN_DESCRIPTION = RunDescription("mujoco_envpool", experiments=[Experiment("mujoco_envpool", _cmd, _params)])
