"""doom_deathmatch_bots with population-based training: 8 policies, each playing full matches against bots.

Unlike self-play, each env holds one agent (--pbt_mix_policies_in_one_env=False): the bots are the opponents and
PBT only compares the policies' scores. Sized for one GPU node:

python -m sample_factory.launcher.run --run=sf_examples.vizdoom.experiments.doom_deathmatch_bots_pbt \
    --backend=slurm --slurm_gpus_per_job=1 --slurm_cpus_per_gpu=36 --slurm_timeout=12h
"""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import DOOM_PBT_8_POLICIES

_params = ParamGrid([("seed", [0])])

_cmd = f"{DOOM_PBT_8_POLICIES} --env=doom_deathmatch_bots --pbt_mix_policies_in_one_env=False --num_envs_per_worker=4"

RUN_DESCRIPTION = RunDescription(
    "doom_deathmatch_bots_pbt", experiments=[Experiment("bots_pbt_8p", _cmd, _params)], customize_experiment_name=False
)
