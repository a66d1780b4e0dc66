"""Episodes that rollout workers report while they stop still reach the log: a short run has no other report."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.algo.runners.runner_component import RunnerComponent
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router


@pytest.fixture
def runner() -> RunnerComponent:
    inboxes = {"main": LocalInbox(), "w0": LocalInbox()}
    router = Router({"runner": "main", "rollout_w0": "w0"}, inboxes)
    cfg = default_cfg(env="x")
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    component = RunnerComponent(cfg, info, router)
    component.component_names = ["rollout_w0"]
    component.loop = EventLoop("main", inboxes["main"], router)
    component.loop.add_component(component)
    component.sampling_started_at = component.train_started
    return component


def reward_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Avg episode reward")]


def test_episodes_reported_while_stopping_are_logged_at_the_end(runner, caplog):
    caplog.set_level(logging.INFO)
    runner.request_stop(save=False)
    assert reward_lines(caplog) == []  # nothing finished yet when the stop was requested
    runner.on_episodes_finished([(0, 12.5, 30, 12.5, None)])  # the worker's last report, sent as it stops
    runner.on_component_stopped("rollout_w0", "")
    assert reward_lines(caplog) == ["Avg episode reward: [(0, '12.500')]"]


def test_no_second_reward_line_when_nothing_arrived_after_the_stop(runner, caplog):
    caplog.set_level(logging.INFO)
    runner.on_episodes_finished([(0, 3.0, 10, 3.0, None)])
    runner.request_stop(save=False)
    runner.on_component_stopped("rollout_w0", "")
    assert reward_lines(caplog) == ["Avg episode reward: [(0, '3.000')]"]
