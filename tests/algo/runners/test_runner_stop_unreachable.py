"""Stopping the run when a component's loop is gone with its inbox full: it counts as stopped, the run fails."""

from __future__ import annotations

import queue

import gymnasium as gym
import numpy as np

from sample_factory.algo.runners.runner_component import RunnerComponent
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router, make_mp_inbox
from sample_factory.utils.misc import ExperimentStatus


def test_stop_request_to_a_dead_full_inbox_does_not_block_or_skip_the_others():
    dead_inbox = make_mp_inbox(max_bytes=200)
    while True:  # fill it up
        try:
            dead_inbox.put(("rollout_w0", "on_heartbeat", ()), block=False)
        except queue.Full:
            break
    names = ["rollout_w0", "inference_p0_w0"]
    inboxes = {"main": LocalInbox(), "w0": dead_inbox, "inf": LocalInbox()}
    router = Router({"runner": "main", "rollout_w0": "w0", "inference_p0_w0": "inf"}, inboxes)
    router.retry_period = 0.01
    router.liveness.mark_exited("w0")  # its process died
    cfg = default_cfg(env="x")
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    runner = RunnerComponent(cfg, info, router)
    runner.component_names = names
    loop = EventLoop("main", inboxes["main"], router)
    loop.add_component(runner)

    runner.request_stop()
    assert runner.status == ExperimentStatus.FAILURE
    assert "rollout_w0" in runner.stopped_trees  # nothing left to wait for there
    assert inboxes["inf"].get_many() == [("inference_p0_w0", "on_stop_requested", ())]  # the others are still told
    dead_inbox.close()
