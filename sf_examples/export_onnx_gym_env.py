"""Export a policy trained by ``sf_examples.train_gym_env`` to ONNX.

python -m sf_examples.export_onnx_gym_env --env=CartPole-v1 --experiment=cartpole [--onnx_path=policy.onnx]

Without ``--onnx_path`` the file is ``{train_dir}/{experiment}/{experiment}.onnx``. Needs the onnx extra:
pip install "sample-factory[onnx]". See ``sample_factory.export_onnx`` for the inputs and outputs of the graph.
"""

from __future__ import annotations

import sys

from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.export_onnx import default_onnx_path, export_onnx
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import StatusCode
from sf_examples.train_gym_env import parse_gym_args, register_env_from_cfg

PATH_FLAG = "--onnx_path="


def split_path_flag(argv: list[str]) -> tuple[str | None, list[str]]:
    """``--onnx_path=...`` is this script's own flag: take it out before the library parses the rest."""
    paths = [arg[len(PATH_FLAG) :] for arg in argv if arg.startswith(PATH_FLAG)]
    return (paths[-1] if paths else None), [arg for arg in argv if not arg.startswith(PATH_FLAG)]


def main(argv: list[str] | None = None) -> StatusCode:
    path, rest = split_path_flag(sys.argv[1:] if argv is None else argv)
    cfg = parse_gym_args(rest, evaluation=True)
    try:
        register_env_from_cfg(cfg)
    except UnknownEnvError as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return export_onnx(cfg, path or default_onnx_path(cfg))


if __name__ == "__main__":
    sys.exit(main())
