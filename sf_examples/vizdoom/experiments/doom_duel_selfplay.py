"""Self-play on doom_duel: a population of 8 policies trained with population-based training (PBT).

Each match mixes agents of different policies (--pbt_mix_policies_in_one_env), so every policy learns against
the others; PBT periodically replaces the weakest policies with mutated copies of the strongest. One experiment
holds the whole population. Sized for one GPU node:

python -m sample_factory.launcher.run --run=sf_examples.vizdoom.experiments.doom_duel_selfplay --backend=slurm \
    --slurm_gpus_per_job=1 --slurm_cpus_per_gpu=36 --slurm_timeout=12h
"""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription

_params = ParamGrid([("seed", [0])])

_cmd = (
    "python -m sf_examples.vizdoom.train_vizdoom --env=doom_duel --train_for_env_steps=2000000000 "
    "--num_policies=8 --with_pbt=True --pbt_mix_policies_in_one_env=True --pbt_period_env_steps=5000000 "
    "--pbt_start_mutation=100000000 --pbt_replace_reward_gap=0.5 --pbt_replace_reward_gap_absolute=0.35 "
    "--num_workers=32 --num_envs_per_worker=8 --batch_size=2048 --env_frameskip=2 --use_rnn=True "
    "--res_w=128 --res_h=72 --wide_aspect_ratio=False --gamma=0.995"
)

RUN_DESCRIPTION = RunDescription(
    "doom_duel_selfplay", experiments=[Experiment("duel_pbt_8p", _cmd, _params)], customize_experiment_name=False
)
