"""Run descriptions for the launcher: Sample Factory 2's VizDoom experiments, with its flags, plus a few more.

``python -m sample_factory.launcher.run --run=sf_examples.vizdoom.experiments.X``

``SF_EXPERIMENT_EXTRA_ARGS`` (read when the launcher loads a run description) is appended to every command of these
experiments; a flag given twice takes its last value, so it overrides a budget or a machine size, e.g.
``SF_EXPERIMENT_EXTRA_ARGS="--train_for_env_steps=20000 --num_workers=2 --num_envs_per_worker=2 --device=cpu"``.
"""

import os

EXTRA_ARGS_VARIABLE = "SF_EXPERIMENT_EXTRA_ARGS"
TRAIN = "python -m sf_examples.vizdoom.train_vizdoom"

# what the two PBT experiments share: 8 policies trained for 2B env steps on one 32-worker GPU node, a recurrent
# policy on 128x72 4:3 frames, an action every 2nd frame
DOOM_PBT_8_POLICIES = (
    "python -m sf_examples.vizdoom.train_vizdoom --train_for_env_steps=2000000000 --num_policies=8 --with_pbt=True "
    "--pbt_period_env_steps=5000000 --pbt_start_mutation=100000000 --num_workers=32 --batch_size=2048 "
    "--env_frameskip=2 --use_rnn=True --res_w=128 --res_h=72 --wide_aspect_ratio=False --gamma=0.995"
)

# Sample Factory 2's paper settings (docs/09-environment-integrations/vizdoom.md there): the six basic scenarios,
# the battle maps on a 36-core server, and PBT against bots and in self-play
BASIC_ENVS_CMD = (
    "--train_for_env_steps=500000000 --algo=APPO --env_frameskip=4 --use_rnn=True --num_workers=36 "
    "--num_envs_per_worker=8 --num_policies=1 --batch_size=2048 --wide_aspect_ratio=False"
)
BATTLE_CMD = (
    "--train_for_env_steps=4000000000 --algo=APPO --env_frameskip=4 --use_rnn=True --num_workers=72 "
    "--num_envs_per_worker=8 --num_policies=1 --batch_size=2048 --wide_aspect_ratio=False --max_grad_norm=0.0"
)
DUEL_BOTS_CMD = (
    "--env=doom_duel_bots --train_for_seconds=360000 --algo=APPO --gamma=0.995 --env_frameskip=2 --use_rnn=True "
    "--reward_scale=0.5 --num_workers=72 --num_envs_per_worker=32 --num_policies=8 --batch_size=2048 "
    "--benchmark=False --res_w=128 --res_h=72 --wide_aspect_ratio=False --pbt_replace_reward_gap=0.2 "
    "--pbt_replace_reward_gap_absolute=3.0 --pbt_period_env_steps=5000000 --save_milestones_sec=1800 --with_pbt=True"
)
DEATHMATCH_BOTS_CMD = (
    "--env=doom_deathmatch_bots --train_for_seconds=3600000 --algo=APPO --use_rnn=True --gamma=0.995 "
    "--env_frameskip=2 --num_workers=80 --num_envs_per_worker=24 --num_policies=8 --batch_size=2048 --res_w=128 "
    "--res_h=72 --wide_aspect_ratio=False --with_pbt=True --pbt_period_env_steps=5000000"
)
SELFPLAY_CMD = (
    "--train_for_seconds=360000 --algo=APPO --gamma=0.995 --env_frameskip=2 --use_rnn=True --num_workers=72 "
    "--num_envs_per_worker=16 --num_policies=8 --batch_size=2048 --res_w=128 --res_h=72 --wide_aspect_ratio=False "
    "--benchmark=False --pbt_period_env_steps=5000000 --with_pbt=True --pbt_start_mutation=100000000"
)


def train_command(flags: str) -> str:
    """The training command of an experiment: ``train_vizdoom`` with ``flags``, then ``$SF_EXPERIMENT_EXTRA_ARGS``."""
    extra = os.environ.get(EXTRA_ARGS_VARIABLE, "").strip()
    return " ".join(part for part in (TRAIN, flags, extra) if part)
