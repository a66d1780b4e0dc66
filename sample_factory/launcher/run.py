"""Entry point of the launcher: ``python -m sample_factory.launcher.run --run=MODULE --backend=...``.

It loads ``RUN_DESCRIPTION`` from the module, expands it into one command per experiment and hands the list to a
backend (local processes, Slurm or NGC). Each backend adds its own flag group, chosen from ``--backend`` before the
full parse, so ``--backend=slurm --help`` lists the Slurm flags and a Slurm flag given to another backend is an
error naming the backend it belongs to rather than a silently ignored value. The launcher never imports torch: it
runs on login nodes and in CI images without it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from sample_factory.launcher import run_ngc, run_processes, run_slurm
from sample_factory.launcher.launcher_utils import LauncherError, launcher_flags
from sample_factory.launcher.run_description import RunDescription

BACKENDS: dict[str, ModuleType] = {"processes": run_processes, "slurm": run_slurm, "ngc": run_ngc}


def _backend_from(args: Sequence[str]) -> str:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--backend", default="processes")
    known, _ = pre.parse_known_args(args)
    return known.backend


def launcher_argparser(args: Sequence[str]) -> argparse.ArgumentParser:
    """The launcher's parser: the common flags plus the flag group of the backend that ``args`` selects."""
    parser = argparse.ArgumentParser(
        prog="python -m sample_factory.launcher.run",
        description="Run every experiment of a RunDescription on local processes, Slurm or NGC.",
        epilog="Each backend has its own flags: add --backend=slurm (or ngc, processes) to --help to list them.",
    )
    launcher_flags().add_flags(parser, "common")  # --backend's choices are the keys of BACKENDS
    backend = BACKENDS.get(_backend_from(args))
    if backend is not None:
        backend.add_arguments(parser)
    return parser


def _owner_of(flag: str) -> str | None:
    name = flag.split("=", 1)[0]
    for backend_name, module in BACKENDS.items():
        probe = argparse.ArgumentParser(add_help=False)
        module.add_arguments(probe)
        if any(name in action.option_strings for action in probe._actions):
            return backend_name
    return None


def parse_launcher_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = launcher_argparser(argv)
    args, unknown = parser.parse_known_args(argv)
    if args.run is None:
        parser.error(
            "--run is required: the module (e.g. sf_examples.gym.experiments.cartpole_seeds) or .py file "
            "that defines RUN_DESCRIPTION"
        )
    for flag in unknown:
        owner = _owner_of(flag)
        hint = f"it is a flag of --backend={owner}" if owner else "see --help for the flags of each backend"
        parser.error(f"{flag} does not apply to --backend={args.backend}: {hint}")
    return args


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The launcher's arguments from ``argv`` (default: the command line), checked as :func:`main` checks them."""
    return parse_launcher_args(list(sys.argv[1:] if argv is None else argv))


def load_run_description(run: str) -> RunDescription:
    """``RUN_DESCRIPTION`` of a module name or a path to a .py file."""
    module = _load_file(run) if run.endswith(".py") else _import(run)
    description = getattr(module, "RUN_DESCRIPTION", None)
    if not isinstance(description, RunDescription):
        raise LauncherError(
            f"--run={run}: the module defines no RUN_DESCRIPTION = RunDescription(...) (found {type(description)})"
        )
    return description


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise LauncherError(
                f"--run={name}: no module {e.name!r} on the Python path (run from the folder that contains it, "
                f"or pass the path of the .py file)"
            ) from e
        raise


def _load_file(path: str) -> ModuleType:
    if not os.path.isfile(path):
        raise LauncherError(f"--run={path}: no such file")
    spec = importlib.util.spec_from_file_location("_launcher_run_description", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, expand, hand to the backend; the backend's return value is the exit code."""
    args = parse_args(argv)
    try:
        description = load_run_description(args.run)
        description.experiment_suffix = args.experiment_suffix
        backend_run: Callable[[RunDescription, argparse.Namespace], int] = BACKENDS[args.backend].run
        return backend_run(description, args)
    except LauncherError as e:
        print(f"launcher: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
