"""Duel and deathmatch against bots, over discount factors and two seeds, with the paper's bot settings."""

from sample_factory.launcher.launcher_utils import seeds
from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import train_command

_params = ParamGrid([("env", ["doom_duel_bots", "doom_deathmatch_bots"]), ("gamma", [0.99, 0.995]), ("seed", seeds(2))])

_cmd = train_command(
    "--train_for_env_steps=1000000000 --algo=APPO --env_frameskip=2 --use_rnn=True --num_workers=72 "
    "--num_envs_per_worker=24 --batch_size=2048 --res_w=128 --res_h=72 --wide_aspect_ratio=False"
)

RUN_DESCRIPTION = RunDescription("doom_bots_sweep", experiments=[Experiment("bots", _cmd, _params)])
