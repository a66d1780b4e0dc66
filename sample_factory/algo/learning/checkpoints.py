"""Checkpoint files: names, atomic writes, safe loading, rotation.

Files are ``checkpoint_p{policy}/checkpoint_{train_step:09d}_{env_steps}.pth``.
A checkpoint holds only plain tensors, dicts, lists and numbers, so it loads
with ``torch.load(..., weights_only=True)``: a file containing pickled objects
is refused instead of executed.
"""

from __future__ import annotations

import glob
import os
import re

import torch

from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import checkpoint_dir

_NAME_RE = re.compile(r"checkpoint_(\d+)_(\d+)\.pth$")


class CheckpointError(RuntimeError):
    pass


def checkpoint_name(train_step: int, env_steps: int) -> str:
    return f"checkpoint_{train_step:09d}_{env_steps}.pth"


def list_checkpoints(cfg: Config, policy_id: int) -> list[str]:
    """Checkpoint paths of a policy, oldest first (ordered by train step)."""
    folder = checkpoint_dir(cfg, policy_id, mkdir=False)
    paths = [p for p in glob.glob(os.path.join(folder, "checkpoint_*.pth")) if _NAME_RE.search(p)]
    return sorted(paths, key=lambda p: int(_NAME_RE.search(p).group(1)))


def save_checkpoint_atomic(state: dict, path: str) -> None:
    """Write to a temporary file in the same folder, then rename: a crash never leaves half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, path)


def save_checkpoint(cfg: Config, policy_id: int, state: dict, train_step: int, env_steps: int) -> str:
    path = os.path.join(checkpoint_dir(cfg, policy_id), checkpoint_name(train_step, env_steps))
    save_checkpoint_atomic(state, path)
    _remove_old(cfg, policy_id)
    return path


def _remove_old(cfg: Config, policy_id: int) -> None:
    keep = max(1, cfg.keep_checkpoints)
    for old in list_checkpoints(cfg, policy_id)[:-keep]:
        try:
            os.remove(old)
        except OSError as exc:
            log.warning("Could not remove old checkpoint %s: %s", old, exc)


def load_checkpoint_file(path: str, device: str | torch.device = "cpu") -> dict:
    """Load with ``weights_only=True``; raises CheckpointError with the reason."""
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:
        if "weights_only" in str(exc) or "Unsupported global" in str(exc):
            raise CheckpointError(
                f"{path} contains pickled Python objects and was refused: checkpoints must hold only tensors, "
                "dicts and numbers (a file from an untrusted source can run code when unpickled)"
            ) from exc
        raise CheckpointError(f"{path} could not be read: {exc}") from exc


def load_latest_checkpoint(cfg: Config, policy_id: int, device: str | torch.device = "cpu") -> dict | None:
    """The newest readable checkpoint; unreadable newer files are skipped with a warning.

    Returns None when the policy has no checkpoint at all; raises CheckpointError
    when checkpoints exist but none can be read (never a silent fresh start).
    """
    paths = list_checkpoints(cfg, policy_id)
    for path in reversed(paths):
        try:
            state = load_checkpoint_file(path, device)
            log.info("Loaded checkpoint %s", path)
            return state
        except CheckpointError as exc:
            log.warning("Skipping unreadable checkpoint, falling back to the previous one: %s", exc)
    if paths:
        raise CheckpointError(
            f"None of the {len(paths)} checkpoints in {os.path.dirname(paths[0])} could be read. To start over, "
            "run with --restart_behavior=restart (the old folder is moved aside) or remove the checkpoint folder."
        )
    return None
