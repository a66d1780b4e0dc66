"""SyncSamplingAPI in this process (serial mode): trajectories on demand, backpressure, stopping, the policy used."""

from __future__ import annotations

import multiprocessing
import queue

import gymnasium as gym
import numpy as np
import pytest
import torch
from sampling_helpers import ROLLOUT, cartpole_sampling_cfg

from sample_factory.algo.runners.components import SharedState
from sample_factory.algo.runners.setup import initial_policy_weights, obtain_env_info
from sample_factory.algo.sampling.sync_sampling_api import HandoffConsumer, SyncSamplingAPI
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.rl_utils import samples_per_trajectory
from sample_factory.algo.utils.shared_buffers import SlotOwners, TrajectoryBuffers, allocate_trajectories
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.env_utils import register_env
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router
from sample_factory.utils.misc import ExperimentStatus


def _cfg(tmp_path, *extra: str):
    return cartpole_sampling_cfg(tmp_path, "api", "--serial_mode=True", *extra)


def test_serial_sampler_returns_private_trajectories_until_stopped(tmp_path):
    sampler = SyncSamplingAPI(_cfg(tmp_path))
    sampler.start()
    samples, trajectories = 0, []
    while samples < 500:
        trajectory = sampler.get_trajectories_sync()
        samples += samples_per_trajectory(trajectory)
        trajectories.append(trajectory)
    assert sampler.stop() == ExperimentStatus.SUCCESS
    assert sampler.get_trajectories_sync() is None  # stopped: nothing more, even if more had been queued
    assert sampler.stop() == ExperimentStatus.SUCCESS  # idempotent
    first = trajectories[0]
    assert first["rewards"].shape[1] == ROLLOUT and first["obs"]["obs"].shape[1:] == (ROLLOUT + 1, 4)
    assert bool(first["valids"].all()) and float(first["rewards"].sum()) == first["rewards"].numel()  # CartPole: +1
    assert not first["rewards"].is_shared()  # a copy, not a view of the shared slots
    assert len({t["rewards"].data_ptr() for t in trajectories}) == len(trajectories)  # each one its own storage


def test_sampler_that_reaches_its_target_drains_then_returns_none(tmp_path):
    sampler = SyncSamplingAPI(_cfg(tmp_path, "--train_for_env_steps=200"))
    sampler.start()
    samples = 0
    while (trajectory := sampler.get_trajectories_sync()) is not None:
        samples += samples_per_trajectory(trajectory)
    assert samples >= 200
    assert sampler.stop() == ExperimentStatus.SUCCESS
    assert (tmp_path / "api" / "done").exists()


def test_given_weights_are_the_policy_sampled_with(tmp_path):
    cfg = _cfg(tmp_path)
    env_info = obtain_env_info(cfg)
    weights = initial_policy_weights(cfg, env_info, serial=True)[0]
    weights.version[0] = 7
    sampler = SyncSamplingAPI(cfg, env_info, param_servers={0: weights})
    with sampler:
        trajectory = sampler.get_trajectories_sync()
    assert trajectory["policy_version"].eq(7).all()


def test_bad_use_is_refused_with_the_fix(tmp_path):
    with pytest.raises(ValueError, match="--num_policies=1"):
        SyncSamplingAPI(_cfg(tmp_path, "--num_policies=2"))
    with pytest.raises(ValueError, match="max_queued_trajectories"):
        SyncSamplingAPI(_cfg(tmp_path), max_queued_trajectories=0)
    with pytest.raises(RuntimeError, match="start()"):
        SyncSamplingAPI(_cfg(tmp_path)).get_trajectories_sync()


def test_full_queue_keeps_trajectories_in_their_slots_until_the_caller_takes_one():
    cfg = default_cfg(env="x")
    cfg.rollout = 4
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), 1, False, 1, None)
    traj = allocate_trajectories(cfg, info, num_slots=4, share=False)
    traj["rewards"][:] = torch.arange(4).float()[:, None]
    handoff = queue.Queue(maxsize=1)
    # the rollout worker owning every slot lives on another loop: the slots it gets back wait in that inbox
    router = Router(
        {"batcher_p0": "main", "runner": "main", "rollout_w0": "w"}, {"main": LocalInbox(), "w": LocalInbox()}
    )
    loop = EventLoop("main", router.inboxes["main"], router, idle_timeout=0.001)
    buffers = TrajectoryBuffers([traj], PolicySpaces(cfg, info))
    shared = SharedState(cfg, info, buffers, SlotOwners(4, 1, 1), weights=[], serial=True)
    consumer = HandoffConsumer(0, router, shared, handoff)

    def freed() -> list:
        return router.inboxes["w"].get_many(block=False)

    loop.add_component(consumer)

    consumer.on_new_trajectories([2], frames=4)
    consumer.on_new_trajectories([3], frames=4)
    # the second waits in slot 3: the rollout workers cannot reuse it yet
    assert freed() == [("rollout_w0", "on_slots_freed", ([2],))]
    assert handoff.get_nowait()["rewards"][0, 0] == 2.0
    loop.running = True
    for _ in range(50):  # the retry timer queues the waiting trajectory once there is room
        loop.run_once()
        if not handoff.empty():
            break
    assert handoff.get_nowait()["rewards"][0, 0] == 3.0
    assert freed() == [("rollout_w0", "on_slots_freed", ([3],))]


def test_parallel_sampler_stops_every_process(tmp_path):
    sampler = SyncSamplingAPI(_cfg(tmp_path, "--serial_mode=False"))
    sampler.start()
    try:
        trajectories = [sampler.get_trajectories_sync() for _ in range(3)]
        assert multiprocessing.active_children()  # the workers are processes
    finally:
        status = sampler.stop()
    assert status == ExperimentStatus.SUCCESS
    assert all(t["rewards"].shape[1] == ROLLOUT for t in trajectories)
    assert multiprocessing.active_children() == []
    assert sampler.get_trajectories_sync() is None


class _ExplodingEnv(gym.Wrapper):
    def step(self, action):
        raise RuntimeError("the simulator exploded on purpose")


def _make_exploding_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    return _ExplodingEnv(gym.make("CartPole-v1"))


def test_a_failing_component_ends_the_stream_with_a_failure_status(tmp_path):
    register_env("exploding_cartpole_api", _make_exploding_env)
    cfg = _cfg(tmp_path, "--num_workers=1")
    cfg.env = "exploding_cartpole_api"
    sampler = SyncSamplingAPI(cfg)
    sampler.start()
    assert sampler.get_trajectories_sync() is None
    assert sampler.stop() == ExperimentStatus.FAILURE


def test_stop_gives_the_callers_signal_handlers_back(tmp_path):
    import signal

    def mine(signum, frame):
        pass

    previous = signal.signal(signal.SIGINT, mine)
    try:
        sampler = SyncSamplingAPI(_cfg(tmp_path))
        sampler.start()
        assert signal.getsignal(signal.SIGINT) is not mine  # while sampling, Ctrl+C stops the sampler
        sampler.get_trajectories_sync()
        sampler.stop()
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)
