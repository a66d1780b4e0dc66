"""Self-play on doom_duel: a population of 8 policies trained with population-based training (PBT).

Each match mixes agents of different policies (--pbt_mix_policies_in_one_env), so every policy learns against
the others; PBT periodically replaces the weakest policies with mutated copies of the strongest. One experiment
holds the whole population. Sized for one GPU node:

python -m sample_factory.launcher.run --run=sf_examples.vizdoom.experiments.doom_duel_selfplay --backend=slurm \
    --slurm_gpus_per_job=1 --slurm_cpus_per_gpu=36 --slurm_timeout=12h
"""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import DOOM_PBT_8_POLICIES

_params = ParamGrid([("seed", [0])])

_cmd = (
    f"{DOOM_PBT_8_POLICIES} --env=doom_duel --pbt_mix_policies_in_one_env=True --num_envs_per_worker=8 "
    "--pbt_replace_reward_gap=0.5 --pbt_replace_reward_gap_absolute=0.35"
)

RUN_DESCRIPTION = RunDescription(
    "doom_duel_selfplay", experiments=[Experiment("duel_pbt_8p", _cmd, _params)], customize_experiment_name=False
)
