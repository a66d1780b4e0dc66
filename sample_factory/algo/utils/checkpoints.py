"""Checkpoint files: names, atomic writes, safe loading, rotation, best policy and milestones.

Files of policy ``p`` live in ``checkpoint_p{p}/``:

- ``checkpoint_{train_step:09d}_{env_steps}.pth``: the regular ones, the newest ``--keep_checkpoints`` kept;
- ``best_{train_step:09d}_{env_steps}_{metric}_{value:.3f}.pth``: the best policy so far by ``--save_best_metric``
  (only the newest is kept, since a newer best always scored higher);
- ``milestones/checkpoint_{train_step:09d}_{env_steps}.pth``: permanent copies every ``--save_milestones_sec``,
  never deleted, so a long run can be inspected (or restarted) at any stage.

A checkpoint holds only plain tensors, dicts, lists and numbers, so it loads
with ``torch.load(..., weights_only=True)``: a file containing pickled objects
is refused instead of executed.
"""

from __future__ import annotations

import glob
import math
import os
import re
import shutil
from typing import Any

import torch

from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import checkpoint_dir

_NAME_RE = re.compile(r"checkpoint_(\d+)_(\d+)\.pth$")
_BEST_RE = re.compile(r"best_(\d+)_(\d+)_(.+)_(-?\d+\.\d+)\.pth$")
MILESTONES_DIR = "milestones"


class CheckpointError(RuntimeError):
    """A checkpoint file exists but cannot be used; the message says which file and why."""


def checkpoint_name(train_step: int, env_steps: int) -> str:
    return f"checkpoint_{train_step:09d}_{env_steps}.pth"


def list_checkpoints(cfg: Config, policy_id: int) -> list[str]:
    """Checkpoint paths of a policy, oldest first (ordered by train step)."""
    folder = checkpoint_dir(cfg, policy_id, mkdir=False)
    paths = [p for p in glob.glob(os.path.join(folder, "checkpoint_*.pth")) if _NAME_RE.search(p)]
    return sorted(paths, key=lambda p: int(_NAME_RE.search(p).group(1)))


class CheckpointWriteError(OSError):
    """A checkpoint could not be written (full disk, read-only or vanished folder); the message names the fix."""


def save_checkpoint_atomic(state: dict, path: str) -> None:
    """Write to a temporary file in the same folder, then rename: a crash never leaves half a file.

    Raises CheckpointWriteError, naming the file, the cause and the fix, when the disk refuses the write; the
    previous checkpoints are left as they were.
    """
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save(state, tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):  # e.g. disk full: do not leave half a file behind
            _remove_quietly(tmp)
        if isinstance(exc, OSError) or _is_write_error(exc):
            raise CheckpointWriteError(
                f"cannot write checkpoint {path}: {_cause(exc)}. Free disk space or make the folder writable, or "
                "point --train_dir at a disk that is; the older checkpoints in that folder are intact"
            ) from exc
        raise


def _is_write_error(exc: BaseException) -> bool:
    """torch.save reports some failed writes as RuntimeError (its zip writer), the OS error only in the text."""
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("file write failed" in text or "No space left" in text)


def _cause(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]


def save_checkpoint(cfg: Config, policy_id: int, state: dict, train_step: int, env_steps: int) -> str:
    path = os.path.join(checkpoint_dir(cfg, policy_id), checkpoint_name(train_step, env_steps))
    save_checkpoint_atomic(state, path)
    _remove_old(cfg, policy_id)
    return path


def _remove_old(cfg: Config, policy_id: int) -> None:
    keep = max(1, cfg.keep_checkpoints)
    for old in list_checkpoints(cfg, policy_id)[:-keep]:
        _remove_quietly(old)


def load_checkpoint_file(path: str, device: str | torch.device = "cpu") -> dict:
    """Load with ``weights_only=True``; raises CheckpointError with the reason."""
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:
        if "weights_only" in str(exc) or "Unsupported global" in str(exc):
            raise CheckpointError(
                f"{path} contains pickled Python objects and was refused: checkpoints must hold only tensors, "
                "dicts and numbers (a file from an untrusted source can run code when unpickled)"
            ) from exc
        raise CheckpointError(f"{path} could not be read: {exc}") from exc
    if not isinstance(state, dict) or "model" not in state:
        raise CheckpointError(f"{path} is not a checkpoint: expected a dict with a 'model' state dict")
    return state


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


# ---- best policy ---------------------------------------------------------------------------------------------------

_OBJECTIVE_METRICS = ("reward", "true_objective")
EVAL_METRIC_PREFIX = "eval/"  # the evaluator's results (algo.runners.evaluation_reports)
_warned_missing_metrics: set[str] = set()


def best_metric_value(policy_stats: Any, metric: str) -> float | None:
    """The runner's moving average of ``--save_best_metric`` for one policy, None while there is none.

    ``reward`` (the default) means the episode objective: ``info["true_objective"]`` when the env reports one, the
    episode reward otherwise. Any other name is a key of ``info["episode_extra_stats"]``. ``policy_stats`` is the
    runner's ``PolicyStats`` (deques ``true_objective`` and ``extra[key]``). An evaluator metric (``eval/...``) has
    no training average (the evaluator writes the best checkpoints by such a metric itself), so this returns None.
    """
    if metric.startswith(EVAL_METRIC_PREFIX):
        return None
    if metric in _OBJECTIVE_METRICS:
        values = policy_stats.true_objective
    else:
        values = policy_stats.extra.get(metric)
        if values is None and policy_stats.episodes > 0 and metric not in _warned_missing_metrics:
            _warned_missing_metrics.add(metric)
            log.warning(
                "--save_best_metric=%s is not among the episode stats (%s): no best checkpoint will be saved. Use "
                "reward or a key of info['episode_extra_stats']",
                metric,
                ", ".join(["reward", *sorted(policy_stats.extra)]),
            )
    if not values:
        return None
    return float(sum(values) / len(values))


def best_checkpoint_name(train_step: int, env_steps: int, metric: str, value: float) -> str:
    """File name of a best checkpoint; the metric name is made file-system safe."""
    safe_metric = re.sub(r"[^A-Za-z0-9_.-]", "_", metric) or "metric"
    return f"best_{train_step:09d}_{env_steps}_{safe_metric}_{value:.3f}.pth"


def list_best_checkpoints(cfg: Config, policy_id: int) -> list[str]:
    """Best-checkpoint paths of a policy, oldest first (ordered by train step)."""
    folder = checkpoint_dir(cfg, policy_id, mkdir=False)
    paths = [p for p in glob.glob(os.path.join(folder, "best_*.pth")) if _BEST_RE.search(p)]
    return sorted(paths, key=lambda p: int(_BEST_RE.search(p).group(1)))


def best_checkpoint_value(cfg: Config, policy_id: int, metric: str) -> float | None:
    """The score in the name of the policy's newest best checkpoint when ``metric`` chose it, else None: where a
    resumed run's bar for a new best stands."""
    paths = list_best_checkpoints(cfg, policy_id)
    if not paths:
        return None
    _, _, name, value = _BEST_RE.search(paths[-1]).groups()
    safe_metric = re.sub(r"[^A-Za-z0-9_.-]", "_", metric) or "metric"
    return float(value) if name == safe_metric else None


def best_checkpoint_path(cfg: Config, policy_id: int) -> str | None:
    """The newest best checkpoint of the policy whatever its metric, or None."""
    paths = list_best_checkpoints(cfg, policy_id)
    return paths[-1] if paths else None


def save_best_checkpoint(
    cfg: Config, policy_id: int, state: dict, train_step: int, env_steps: int, metric: str, value: float
) -> str:
    """Write the new best atomically, then delete the previous bests: they all scored lower."""
    if not math.isfinite(value):
        raise ValueError(f"the best-policy metric {metric!r} must be a finite number, got {value}")
    name = best_checkpoint_name(train_step, env_steps, metric, value)
    path = os.path.join(checkpoint_dir(cfg, policy_id), name)
    save_checkpoint_atomic(state, path)
    for old in list_best_checkpoints(cfg, policy_id):
        if os.path.abspath(old) != os.path.abspath(path):
            _remove_quietly(old)
    return path


# ---- milestones ----------------------------------------------------------------------------------------------------


def milestones_dir(cfg: Config, policy_id: int) -> str:
    return os.path.join(checkpoint_dir(cfg, policy_id), MILESTONES_DIR)


def save_milestone(cfg: Config, policy_id: int, checkpoint_path: str) -> str:
    """Copy a freshly written checkpoint into ``milestones/`` (temp file + rename, like every checkpoint write)."""
    folder = milestones_dir(cfg, policy_id)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, os.path.basename(checkpoint_path))
    tmp = f"{path}.tmp.{os.getpid()}"
    shutil.copyfile(checkpoint_path, tmp)
    os.replace(tmp, path)
    return path


def _remove_quietly(path: str) -> None:
    """Deleting an outdated file may fail (e.g. someone else removed it first): that must not stop training."""
    try:
        os.remove(path)
    except OSError as exc:
        log.warning("Could not remove old checkpoint %s: %s", path, exc)
