"""doom_deathmatch_bots with population-based training: 8 policies, each playing full matches against bots.

Unlike self-play, each env holds one agent (--pbt_mix_policies_in_one_env=False): the bots are the opponents and
PBT only compares the policies' scores. Sized for one GPU node:

python -m sample_factory.launcher.run --run=sf_examples.vizdoom.experiments.doom_deathmatch_bots_pbt \
    --backend=slurm --slurm_gpus_per_job=1 --slurm_cpus_per_gpu=36 --slurm_timeout=12h
"""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription

_params = ParamGrid([("seed", [0])])

_cmd = (
    "python -m sf_examples.vizdoom.train_vizdoom --env=doom_deathmatch_bots --train_for_env_steps=2000000000 "
    "--num_policies=8 --with_pbt=True --pbt_mix_policies_in_one_env=False --pbt_period_env_steps=5000000 "
    "--pbt_start_mutation=100000000 --num_workers=32 --num_envs_per_worker=4 --batch_size=2048 "
    "--env_frameskip=2 --use_rnn=True --res_w=128 --res_h=72 --wide_aspect_ratio=False --gamma=0.995"
)

RUN_DESCRIPTION = RunDescription(
    "doom_deathmatch_bots_pbt", experiments=[Experiment("bots_pbt_8p", _cmd, _params)], customize_experiment_name=False
)
