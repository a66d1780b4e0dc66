"""A project's own script, as written against Sample Factory 2: register its envs, then train, enjoy or evaluate.

    python tests/user_code/sf2_project_script.py PHASE[,PHASE...] --env=NAME --train_dir=DIR [more flags]

Phases: ``train`` (with the project's observer registered), ``enjoy``, ``eval``. Each starts with ``=== <phase>``
and ends with ``=== <phase> status <code>``; the process exits with the first non-zero status.
"""

from __future__ import annotations

import sys

from sf2_project_envs import ENV_FACTORIES
from sf2_project_observers import ProjectSummaries

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.enjoy import enjoy
from sample_factory.envs.env_utils import register_env
from sample_factory.eval import do_eval
from sample_factory.train import make_runner

DEFAULTS = dict(
    device="cpu", num_workers=1, num_envs_per_worker=2, rollout=32, batch_size=128, num_batches_per_epoch=1,
    num_epochs=1, decorrelate_experience_max_seconds=0, seed=1, use_rnn=False, encoder_mlp_layers=[32],
    normalize_input=False, experiment_summaries_interval=1, no_render=True,
)  # fmt: skip

EVALUATION_ONLY = ("--max_num_episodes", "--max_num_frames")  # flags of enjoy and eval, dropped for training


def parse(argv: list[str], evaluation: bool = False):
    parser, _ = parse_sf_args(argv=argv, evaluation=evaluation)
    parser.set_defaults(**DEFAULTS)
    return parse_full_cfg(parser, argv)


def train(argv: list[str]) -> int:
    argv = [arg for arg in argv if not arg.startswith(EVALUATION_ONLY)]
    cfg, runner = make_runner(parse(argv))
    runner.register_observer(ProjectSummaries())
    status = runner.init()
    return runner.run() if status == 0 else status


PHASES = {
    "train": train,
    "enjoy": lambda argv: enjoy(parse(argv, evaluation=True))[0],
    "eval": lambda argv: do_eval(parse(argv, evaluation=True)),
}


def main(argv: list[str]) -> int:
    for name, make in ENV_FACTORIES.items():
        register_env(name, make)
    for phase in argv[0].split(","):
        print(f"=== {phase}", flush=True)
        status = PHASES[phase](argv[1:])
        print(f"=== {phase} status {status}", flush=True)
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
