"""doom_freedm: 4 policies in population-based training on a free-for-all deathmatch against bots.

Needs a ``doom_freedm`` env (Sample Factory 2's FreeDM map, not shipped with the vizdoom package): until one is
registered, each experiment stops at start with the list of the VizDoom envs there are.
"""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import train_command

_params = ParamGrid([("seed", [0])])

_cmd = train_command(
    "--env=doom_freedm --train_for_seconds=360000 --algo=APPO --gamma=0.995 --env_frameskip=2 --use_rnn=True "
    "--num_workers=72 --num_envs_per_worker=24 --num_policies=4 --batch_size=2048 --res_w=128 --res_h=72 "
    "--wide_aspect_ratio=False --with_pbt=True --pbt_period_env_steps=5000000"
)

RUN_DESCRIPTION = RunDescription("doom_freedm", experiments=[Experiment("freedm", _cmd, _params)])
