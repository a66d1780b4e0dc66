"""A configuration is complete or rejected: no code reads a flag with a fallback of its own.

An experiment saved before a flag existed resumes with the flag's declared default (and a log line saying so), and
the code then reads that value. Each of the three tests below covers a flag whose reader used to fall back to a value
that disagreed with the declared default when the flag was missing: ``--env_error_behavior`` (``fail`` instead of
``recreate``), ``--device`` (``cpu`` instead of ``gpu``) and ``--reset_timeout_seconds`` (0 instead of 120).
"""

from __future__ import annotations

import json
import os

import pytest

from sample_factory.algo.runners.runner_serial import SerialRunner
from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.shared_buffers import (
    TrajectoryBuffers,
    allocate_trajectories,
    make_slot_owners,
    num_trajectory_slots,
)
from sample_factory.cfg.arguments import default_cfg
from sample_factory.cfg.config_io import cfg_dict, load_from_checkpoint
from sample_factory.envs.env_info import obtain_env_info
from sample_factory.messaging.event_loop import LocalInbox, Router
from sample_factory.utils.flags import flag_value
from sample_factory.utils.gpu_utils import env_actions_device
from sample_factory.utils.utils import cfg_file
from sf_examples.gym.gym_utils import register_gym_env


def _resumed_without(tmp_path, flag: str, **overrides):
    """The config a resume gets when ``config.json`` was written by a release that did not have ``flag``."""
    cfg = default_cfg(env="CartPole-v1", experiment="old")
    cfg.train_dir = str(tmp_path)
    for name, value in overrides.items():
        setattr(cfg, name, value)
    saved = cfg_dict(cfg)
    del saved[flag]
    os.makedirs(os.path.dirname(cfg_file(cfg)), exist_ok=True)
    with open(cfg_file(cfg), "w") as f:
        json.dump(saved, f)
    return load_from_checkpoint(cfg)


def test_a_missing_flag_is_an_error_naming_it() -> None:
    cfg = default_cfg()
    del cfg.env_error_behavior
    with pytest.raises(KeyError, match="no flag 'env_error_behavior'"):
        flag_value(cfg, "env_error_behavior")


def test_resumed_without_env_error_behavior_recreates_failing_envs(tmp_path, sf_log) -> None:
    register_gym_env("CartPole-v1")
    cfg = _resumed_without(tmp_path, "env_error_behavior", num_envs_per_worker=2, worker_num_splits=1)
    assert cfg.env_error_behavior == "recreate"
    assert "Adding new argument 'env_error_behavior'='recreate'" in sf_log.text()
    env_info = obtain_env_info(cfg)
    num_slots = num_trajectory_slots(cfg, env_info)
    traj = allocate_trajectories(cfg, env_info, num_slots, share=False)
    router = Router({"rollout_w0": "main", "runner": "main"}, {"main": LocalInbox()})
    buffers = TrajectoryBuffers([traj], PolicySpaces(cfg, env_info))
    worker = RolloutWorker(cfg, env_info, 0, router, buffers, make_slot_owners(cfg, env_info, num_slots))
    try:
        worker._create_envs()
        assert all(runner.recovery is not None for runner in worker.runners)  # "fail" would leave none
    finally:
        worker.on_stop()
    del cfg.env_error_behavior  # a config that skipped the merge: an error naming the flag, not a silent "fail"
    with pytest.raises(AttributeError, match="env_error_behavior"):
        worker._make_split_runner(0, 2, [{}])


def test_resumed_without_device_computes_on_the_gpu_as_declared(tmp_path) -> None:
    cfg = _resumed_without(tmp_path, "device", env_gpu_actions=True)
    assert cfg.device == "gpu"
    assert env_actions_device(cfg).type == "cuda"  # asks no CUDA question: a "cpu" fallback would say cpu
    del cfg.device
    with pytest.raises(AttributeError, match="device"):
        env_actions_device(cfg)


def test_resumed_without_reset_timeout_gives_the_serial_start_up_its_declared_limit(tmp_path) -> None:
    register_gym_env("CartPole-v1")
    cfg = _resumed_without(tmp_path, "reset_timeout_seconds", serial_mode=True, heartbeat_timeout=30, num_workers=1)
    assert cfg.reset_timeout_seconds == 120
    runner = SerialRunner(cfg, loop_specs=lambda cfg: [])
    try:
        runner.init()
        assert runner.watchdog.startup_timeout_s == 120  # a fallback of 0 would give the start-up only 30 s
    finally:
        if runner.component is not None and runner.component.writers is not None:
            runner.component.writers.close()
    del cfg.reset_timeout_seconds
    incomplete = SerialRunner(cfg, loop_specs=lambda cfg: [])
    try:
        with pytest.raises(AttributeError, match="reset_timeout_seconds"):
            incomplete.init()
    finally:
        if incomplete.component is not None and incomplete.component.writers is not None:
            incomplete.component.writers.close()
