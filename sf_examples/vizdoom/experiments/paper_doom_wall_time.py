"""Throughput on doom_benchmark: the paper's 10-core (20 workers x 32 envs) and 36-core (72 x 24) settings."""

from sample_factory.launcher.run_description import Experiment, ParamGrid, RunDescription
from sf_examples.vizdoom.experiments import train_command

_params = ParamGrid([("seed", [0])])

_common = "--env=doom_benchmark --algo=APPO --env_frameskip=4 --use_rnn=True --num_policies=1 --res_w=128 --res_h=72"
_cores_10 = train_command(
    f"{_common} --num_workers=20 --num_envs_per_worker=32 --batch_size=4096 --wide_aspect_ratio=False "
    "--policy_workers_per_policy=2 --worker_num_splits=2"
)
_cores_36 = train_command(
    f"{_common} --num_workers=72 --num_envs_per_worker=24 --batch_size=8192 --wide_aspect_ratio=False "
    "--policy_workers_per_policy=2"
)

RUN_DESCRIPTION = RunDescription(
    "paper_doom_wall_time",
    experiments=[Experiment("appo_fps_20_32", _cores_10, _params), Experiment("appo_w72_v24", _cores_36, _params)],
    customize_experiment_name=False,
)
