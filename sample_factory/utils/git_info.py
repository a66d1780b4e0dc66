"""What version of the user's code a run used: the Git work tree, its commit and its uncommitted changes.

Experiments are run from a project's checkout; keeping the commit hash and the diff next to the results makes a run
reproducible after the code has moved on. Everything here asks the ``git`` command and answers ``None`` (or writes
nothing) outside a work tree or where Git is not installed: provenance is nice to have, never a reason to fail a run.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from sample_factory.utils.logging_setup import log

__all__ = ["git_root", "get_git_commit_hash", "save_git_diff", "GIT_DIFF_FILE_NAME"]

GIT_DIFF_FILE_NAME = "git.diff"
_GIT_TIMEOUT_S = 30.0


def _git(args: list[str], cwd: str | None) -> str | None:
    """Stdout of ``git <args>`` run in ``cwd`` (None: the current folder); None when Git fails or is missing."""
    executable = shutil.which("git")
    if executable is None:
        return None
    try:
        result = subprocess.run(
            [executable, *args], cwd=cwd, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        log.debug("git %s failed: %s", " ".join(args), error)
        return None
    return result.stdout if result.returncode == 0 else None


def git_root(cwd: str | None = None) -> str | None:
    """The top folder of the Git work tree that holds ``cwd`` (default: the current folder), or None outside one."""
    out = _git(["rev-parse", "--show-toplevel"], cwd)
    return out.strip() if out else None


def get_git_commit_hash(cwd: str | None = None) -> str | None:
    """The full hash of the commit checked out in the work tree of ``cwd`` (default: the current folder), or None."""
    out = _git(["rev-parse", "HEAD"], cwd)
    return out.strip() if out else None


def save_git_diff(directory: str, cwd: str | None = None) -> str | None:
    """Write the uncommitted changes (``git diff HEAD``, staged and unstaged) of the work tree of ``cwd`` to
    ``{directory}/git.diff``; return the file's path, or None outside a work tree (nothing is written then).

    An empty file means the run used exactly the committed code.
    """
    diff = _git(["diff", "HEAD", "--no-color", "--no-ext-diff"], cwd)
    if diff is None:
        return None
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, GIT_DIFF_FILE_NAME)
    with open(path, "w", encoding="utf-8") as f:
        f.write(diff)
    return path
