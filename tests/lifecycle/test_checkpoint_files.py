"""Checkpoint files: atomic rotation, fallback past corrupt files, refusal of pickled objects, best and milestones."""

from __future__ import annotations

import copy
import os
from collections import deque
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
from lifecycle_helpers import captured_log

from sample_factory.algo.learning.learner import Learner
from sample_factory.algo.utils.checkpoints import (
    CheckpointError,
    best_checkpoint_path,
    best_metric_value,
    list_best_checkpoints,
    list_checkpoints,
    load_checkpoint_file,
    load_latest_checkpoint,
    save_best_checkpoint,
    save_checkpoint,
    save_milestone,
)
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo


class Pickled:
    """Any class instance: weights_only loading must refuse to rebuild it."""

    def __init__(self) -> None:
        self.payload = 42


@pytest.fixture
def cfg(tmp_path: Path):
    return SimpleNamespace(train_dir=str(tmp_path), experiment="exp", keep_checkpoints=2)


def _state(step: int) -> dict:
    return {"model": {"w": torch.full((3,), float(step))}, "train_step": step, "env_steps": step * 10}


def test_rotation_keeps_newest_and_loads_latest(cfg) -> None:
    for step in (1, 2, 3):
        save_checkpoint(cfg, 0, _state(step), step, step * 10)
    names = [os.path.basename(p) for p in list_checkpoints(cfg, 0)]
    assert names == ["checkpoint_000000002_20.pth", "checkpoint_000000003_30.pth"]
    assert load_latest_checkpoint(cfg, 0)["train_step"] == 3
    assert not [p for p in os.listdir(os.path.dirname(list_checkpoints(cfg, 0)[0])) if ".tmp" in p]


def test_truncated_newest_falls_back_to_previous_with_warning(cfg) -> None:
    save_checkpoint(cfg, 0, _state(1), 1, 10)
    newest = save_checkpoint(cfg, 0, _state(2), 2, 20)
    with open(newest, "r+b") as f:
        f.truncate(100)
    with captured_log() as logs:
        state = load_latest_checkpoint(cfg, 0)
    assert state["train_step"] == 1
    assert "falling back to the previous one" in logs.text() and "checkpoint_000000002_20.pth" in logs.text()


def test_no_readable_checkpoint_is_an_error_not_a_fresh_start(cfg) -> None:
    path = save_checkpoint(cfg, 0, _state(1), 1, 10)
    Path(path).write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="could be read.*--restart_behavior=restart"):
        load_latest_checkpoint(cfg, 0)
    assert load_latest_checkpoint(SimpleNamespace(**{**vars(cfg), "experiment": "other"}), 0) is None


def test_pickled_object_is_refused_with_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "evil.pth"
    torch.save({"model": {}, "extra": Pickled()}, path)
    with pytest.raises(CheckpointError, match="contains pickled Python objects and was refused"):
        load_checkpoint_file(str(path))


def test_best_checkpoint_name_rotation_and_lookup(cfg) -> None:
    save_best_checkpoint(cfg, 0, _state(5), 5, 5000, "reward", 12.3456)
    newest = save_best_checkpoint(cfg, 0, _state(9), 9, 9000, "reward", -0.5)
    assert [os.path.basename(p) for p in list_best_checkpoints(cfg, 0)] == ["best_000000009_9000_reward_-0.500.pth"]
    assert best_checkpoint_path(cfg, 0) == newest
    other = save_best_checkpoint(cfg, 0, _state(11), 11, 11000, "kills/min", 3.0)
    assert os.path.basename(other) == "best_000000011_11000_kills_min_3.000.pth"
    with pytest.raises(ValueError, match="finite"):
        save_best_checkpoint(cfg, 0, _state(12), 12, 12000, "reward", float("nan"))


def test_milestones_are_copies_that_rotation_never_deletes(cfg) -> None:
    first = save_checkpoint(cfg, 0, _state(1), 1, 10)
    milestone = save_milestone(cfg, 0, first)
    for step in (2, 3, 4):
        save_checkpoint(cfg, 0, _state(step), step, step * 10)
    assert not os.path.exists(first) and os.path.isfile(milestone)
    assert os.path.basename(os.path.dirname(milestone)) == "milestones"
    assert load_checkpoint_file(milestone)["train_step"] == 1


def test_best_metric_value_uses_true_objective_or_extra_stats() -> None:
    stats = SimpleNamespace(true_objective=deque([1.0, 3.0]), extra={"kills": deque([4.0])}, episodes=2)
    assert best_metric_value(stats, "reward") == 2.0
    assert best_metric_value(stats, "kills") == 4.0
    with captured_log() as logs:
        assert best_metric_value(stats, "no_such_stat") is None
    assert "--save_best_metric=no_such_stat" in logs.text()
    assert best_metric_value(SimpleNamespace(true_objective=deque(), extra={}, episodes=0), "reward") is None


def test_learner_state_round_trips_through_a_weights_only_file(tmp_path: Path) -> None:
    """Model with normalisers, optimiser moments, counters and the lr schedule survive save + load exactly."""
    cfg = copy.deepcopy(default_cfg(env="ckpt_test"))
    cfg.device, cfg.encoder_mlp_layers, cfg.lr_schedule = "cpu", [8], "kl_adaptive_minibatch"
    env_info = EnvInfo(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    source = Learner(cfg, env_info)
    source.init()
    source.actor_critic.train()
    source.actor_critic.normalize_obs({"obs": torch.randn(32, 3) * 5})
    loss = source.actor_critic.forward_head(source.actor_critic.normalize_obs({"obs": torch.randn(4, 3)})).sum()
    loss.backward()
    source.optimizer.step()
    source.train_step, source.policy_version, source.lr_schedule.lr = 7, 70, 3e-4
    path = tmp_path / "state.pth"
    torch.save(source.get_checkpoint_state(), path)

    restored = Learner(cfg, env_info)
    restored.init()
    restored.load_checkpoint_state(load_checkpoint_file(str(path)))
    for key, value in source.actor_critic.state_dict().items():
        assert torch.equal(value, restored.actor_critic.state_dict()[key]), key
    moments = [s["exp_avg"] for s in restored.optimizer.state_dict()["state"].values()]
    assert moments and all(torch.equal(a, b["exp_avg"]) for a, b in zip(
        moments, source.optimizer.state_dict()["state"].values(), strict=True))  # fmt: skip
    assert (restored.train_step, restored.policy_version, restored.lr) == (7, 70, 3e-4)
