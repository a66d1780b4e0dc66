"""Start TensorBoard on the experiments whose folders match wildcard masks.

python -m sample_factory.utils.tb 'train_dir/cartpole_*' 'train_dir/doom_*/' [--port=6006] [--dry_run]

A mask is a glob pattern (quote it so the shell does not expand it); relative masks that match nothing are also
tried under ``--train_dir``. An experiment is a folder with a ``.summary`` subfolder; a mask may also name a
parent folder, whose experiments are then all included. TensorBoard gets one named run per experiment through
``--logdir_spec name:path,...``, so runs keep their experiment names instead of long paths. ``--dry_run`` prints
the command instead of running it.
"""

from __future__ import annotations

import argparse
import glob
import importlib.metadata
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence

from sample_factory.utils.utils import is_module_available

SUMMARY_DIR = ".summary"
INSTALL_HINT = "pip install tensorboard"


def tb_version() -> str | None:
    """The version of the installed TensorBoard (``"2.16.2"``), or None where it is not installed.

    Read from the package metadata, so TensorBoard (and TensorFlow, which it may pull in) is not imported.
    """
    try:
        return importlib.metadata.version("tensorboard")
    except importlib.metadata.PackageNotFoundError:
        return None


def is_experiment(folder: str) -> bool:
    return os.path.isdir(os.path.join(folder, SUMMARY_DIR))


def experiments_below(folder: str) -> list[str]:
    """``folder`` itself if it is an experiment, else every experiment folder below it (sorted)."""
    if is_experiment(folder):
        return [folder]
    found = []
    for root, dirs, _ in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != SUMMARY_DIR)
        if is_experiment(root):
            found.append(root)
            dirs[:] = []  # an experiment's own subfolders are not experiments
    return found


def match_experiments(masks: Sequence[str], train_dir: str) -> list[str]:
    """Experiment folders matching any mask, without duplicates, in mask order."""
    result: list[str] = []
    for mask in masks:
        paths = sorted(glob.glob(os.path.expanduser(mask)))
        if not paths and not os.path.isabs(mask):
            paths = sorted(glob.glob(os.path.join(train_dir, mask)))
        for path in paths:
            for experiment in experiments_below(os.path.normpath(path)):
                if experiment not in result:
                    result.append(experiment)
    return result


def run_names(folders: Sequence[str]) -> list[str]:
    """Short unique names: the folder name, or its last two path parts when names collide.

    ``:`` and ``,`` separate entries of ``--logdir_spec``, so they are replaced.
    """
    names = [os.path.basename(f) for f in folders]
    if len(set(names)) < len(names):
        names = [os.path.join(os.path.basename(os.path.dirname(f)), os.path.basename(f)) for f in folders]
    unique, seen = [], {}
    for name in names:
        name = name.replace(":", "_").replace(",", "_")
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return unique


def logdir_spec(folders: Sequence[str]) -> str:
    return ",".join(
        f"{name}:{os.path.join(os.path.abspath(f), SUMMARY_DIR)}"
        for name, f in zip(run_names(folders), folders, strict=True)
    )


def tensorboard_command(folders: Sequence[str], port: int, extra: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "tensorboard.main", f"--logdir_spec={logdir_spec(folders)}", f"--port={port}", *extra]


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("masks", nargs="+", help="glob patterns of experiment folders (quoted)")
    parser.add_argument("--train_dir", default="train_dir", help="where relative masks are also looked up")
    parser.add_argument("--port", type=int, default=6006, help="TensorBoard's port")
    parser.add_argument("--dry_run", action="store_true", help="print the TensorBoard command and exit")
    return parser.parse_known_args(argv)  # unknown flags go to TensorBoard itself


def main(argv: Sequence[str] | None = None) -> int:
    args, extra = parse_args(argv)
    folders = match_experiments(args.masks, args.train_dir)
    if not folders:
        print(f"No experiment folder (one with a {SUMMARY_DIR}/ subfolder) matches {args.masks}", file=sys.stderr)
        return 1
    cmd = tensorboard_command(folders, args.port, extra)
    print(f"{len(folders)} experiments: " + ", ".join(run_names(folders)))
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    if not is_module_available("tensorboard"):
        print(f"TensorBoard is not installed: run {INSTALL_HINT}", file=sys.stderr)
        return 1
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
