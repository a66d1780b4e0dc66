"""The view the process watch gets of the runner's component (RunnerControl): what it may see, and the few acts it
may take: fail the run, resume a restarted rollout worker with the messages it missed, count a component stopped."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from sample_factory.algo.runners.components import LoopSpec
from sample_factory.algo.runners.runner_component import RunnerComponent
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router
from sample_factory.utils.misc import ExperimentStatus

NAMES = ["rollout_w0", "rollout_w1"]


def _component(tmp_path) -> tuple[RunnerComponent, LocalInbox]:
    cfg = default_cfg(env="x", experiment="control")
    cfg.train_dir = str(tmp_path)
    inboxes = {"main": LocalInbox(), "others": LocalInbox()}
    router = Router({RUNNER: "main", **dict.fromkeys(NAMES, "others")}, inboxes)
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    component = RunnerComponent(cfg, info, router)
    specs = [LoopSpec(n, "rollout", [n], None, worker_idx=i) for i, n in enumerate(NAMES)]
    component.attach(EventLoop("main", inboxes["main"], router), specs)
    return component, inboxes["others"]


def test_the_control_sees_readiness_and_forgets_a_dead_processes_components(tmp_path):
    component, others = _component(tmp_path)
    control = component.control
    assert control.rollout_workers == NAMES and control.component_kinds == dict.fromkeys(NAMES, "rollout")
    assert not control.sampling_started and not control.stopping
    for name in NAMES:
        component.on_component_ready(name)
    assert control.sampling_started and control.is_ready("rollout_w1")
    assert control.seconds_silent(NAMES) is not None
    control.forget_components(["rollout_w1"])
    assert not control.is_ready("rollout_w1") and control.seconds_silent(["rollout_w1"]) is None
    component.writers.close()


def test_a_restarted_rollout_worker_gets_the_latest_replayed_messages_then_begins(tmp_path):
    component, others = _component(tmp_path)
    component.send("rollout_w0", "on_pbt_reward_shaping", 0, {"a": 1})
    component.send("rollout_w0", "on_pbt_reward_shaping", 0, {"a": 2})
    component.send("rollout_w0", "on_pbt_reward_shaping", 1, {"b": 1})
    component.send("rollout_w1", "on_pbt_reward_shaping", 0, {"c": 1})
    others.get_many()
    component.control.resume_rollout_worker("rollout_w0")
    assert others.get_many() == [
        ("rollout_w0", "on_pbt_reward_shaping", (0, {"a": 2})),
        ("rollout_w0", "on_pbt_reward_shaping", (1, {"b": 1})),
        ("rollout_w0", "on_begin_sampling", ()),
    ]
    component.writers.close()


def test_the_control_fails_the_run_and_counts_dead_components_as_stopped(tmp_path):
    component, others = _component(tmp_path)
    control = component.control
    control.fail("rollout_w1 died")
    assert component.status == ExperimentStatus.FAILURE and control.stopping
    assert [slot for _, slot, _ in others.get_many()] == ["on_stop_requested", "on_stop_requested"]
    control.count_as_stopped("rollout_w0")
    assert control.is_stopped("rollout_w0") and component.writers is not None  # one left to stop
    control.count_as_stopped("rollout_w1")  # the last one: the run finishes and closes its summaries
    assert component.writers is None
