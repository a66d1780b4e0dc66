"""What a trained experiment folder holds, as the Hub upload and its model card need it.

Read-only: nothing in the experiment folder is written or moved. The folder must hold ``config.json`` and a
readable checkpoint for every policy; the newest readable one is taken (an unreadable newer file is skipped with a
warning, as enjoy does). The training reward comes from the policy's best checkpoint, whose file name records the
metric, or else from the last ``Avg episode reward`` line of ``sf_log.txt``.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Any

from sample_factory.algo.utils.checkpoints import (
    CheckpointError,
    list_best_checkpoints,
    list_checkpoints,
    load_checkpoint_file,
)
from sample_factory.cfg.config_io import read_saved_config
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.logging_setup import LOG_FILE_NAME, log
from sample_factory.utils.typing import PolicyID

CONFIG_FILE = "config.json"
# the file names the checkpoint module writes: checkpoint_{train_step:09d}_{env_steps}.pth and
# best_{train_step:09d}_{env_steps}_{metric}_{value:.3f}.pth
_CHECKPOINT_RE = re.compile(r"checkpoint_(\d+)_(\d+)\.pth$")
_BEST_RE = re.compile(r"best_(\d+)_(\d+)_(.+)_(-?\d+\.\d+)\.pth$")
# the runner's periodic log line: Avg episode reward: [(0, '19.033'), (1, '7.500')]
_LOG_REWARD_RE = re.compile(r"Avg episode reward: (\[.*\])\s*$")


class ExperimentFolderError(ValueError):
    """The folder is not a trained experiment that can be shared; the message says what is missing and what to do."""


@dataclass
class PolicyCheckpoint:
    """The checkpoint of one policy that is shared, with the counters its file name records."""

    policy_id: PolicyID
    path: str
    train_step: int
    env_steps: int

    @property
    def relative_path(self) -> str:
        """Where it lies inside the experiment folder (and the Hub repository): ``checkpoint_p0/checkpoint_....pth``."""
        return f"checkpoint_p{self.policy_id}/{os.path.basename(self.path)}"


@dataclass
class TrainingReward:
    """A policy's reward during training and where it was read (``best checkpoint`` or ``sf_log.txt``)."""

    policy_id: PolicyID
    value: float
    metric: str
    source: str


@dataclass
class ExperimentSummary:
    """The saved configuration, the shared checkpoints and the training rewards of one experiment folder."""

    folder: str
    config: AttrDict
    checkpoints: list[PolicyCheckpoint]
    training_rewards: list[TrainingReward] = field(default_factory=list)

    @property
    def env(self) -> str:
        return str(self.config.get("env"))

    @property
    def name(self) -> str:
        return os.path.basename(os.path.normpath(self.folder))


def read_experiment(folder: str) -> ExperimentSummary:
    """Read ``folder``; raises :class:`ExperimentFolderError` when it is not a trained experiment."""
    folder = os.path.abspath(folder)
    config_path = os.path.join(folder, CONFIG_FILE)
    if not os.path.isdir(folder):
        raise ExperimentFolderError(f"{folder} is not a folder: pass -d TRAIN_DIR/EXPERIMENT, the experiment folder")
    if not os.path.isfile(config_path):
        raise ExperimentFolderError(
            f"{folder} has no {CONFIG_FILE}, so it is not an experiment folder: pass the folder that training wrote "
            "(TRAIN_DIR/EXPERIMENT, the one with config.json and checkpoint_p0/)"
        )
    config = read_saved_config(config_path)
    location = AttrDict(train_dir=os.path.dirname(folder), experiment=os.path.basename(folder))
    num_policies = int(config.get("num_policies", 1) or 1)
    checkpoints = [_latest_readable(location, policy_id) for policy_id in range(num_policies)]
    rewards = [r for r in (_training_reward(location, folder, p) for p in range(num_policies)) if r is not None]
    return ExperimentSummary(folder, config, checkpoints, rewards)


def _latest_readable(location: AttrDict, policy_id: PolicyID) -> PolicyCheckpoint:
    """The newest checkpoint that loads (``weights_only``): a broken file must not be what others download."""
    paths = list_checkpoints(location, policy_id)
    for path in reversed(paths):
        try:
            load_checkpoint_file(path)
        except CheckpointError as exc:
            log.warning("Not sharing an unreadable checkpoint, taking the previous one: %s", exc)
            continue
        train_step, env_steps = (int(x) for x in _CHECKPOINT_RE.search(path).groups())
        return PolicyCheckpoint(policy_id, path, train_step, env_steps)
    folder = os.path.join(location.train_dir, location.experiment, f"checkpoint_p{policy_id}")
    found = f"none of its {len(paths)} checkpoints is readable" if paths else "it has no checkpoint_*.pth"
    raise ExperimentFolderError(
        f"policy {policy_id} cannot be shared: {found} in {folder}. Train the experiment (longer) so that every "
        "policy saves a checkpoint, then push again"
    )


def _training_reward(location: AttrDict, folder: str, policy_id: PolicyID) -> TrainingReward | None:
    best = list_best_checkpoints(location, policy_id)
    if best:
        metric, value = _BEST_RE.search(best[-1]).group(3, 4)
        return TrainingReward(policy_id, float(value), metric, f"best checkpoint {os.path.basename(best[-1])}")
    value = last_logged_reward(os.path.join(folder, LOG_FILE_NAME)).get(policy_id)
    if value is None:
        return None
    return TrainingReward(policy_id, value, "reward", f"last 'Avg episode reward' of {LOG_FILE_NAME}")


def last_logged_reward(log_path: str) -> dict[PolicyID, float]:
    """Policy -> reward of the last ``Avg episode reward`` line of a training log ({} when there is none)."""
    if not os.path.isfile(log_path):
        return {}
    last: dict[PolicyID, float] = {}
    with open(log_path, encoding="utf-8", errors="replace") as file:
        for line in file:
            match = _LOG_REWARD_RE.search(line)
            if match:
                last = _parse_reward_pairs(match.group(1)) or last
    return last


def _parse_reward_pairs(text: str) -> dict[PolicyID, float]:
    """``[(0, '19.033'), (1, '7.500')]`` -> {0: 19.033, 1: 7.5}; {} for a line that does not parse."""
    try:
        pairs: Any = ast.literal_eval(text)
        return {int(policy): float(value) for policy, value in pairs}
    except (ValueError, SyntaxError, TypeError):
        return {}
