"""SerialSampler samples in-process on a given event loop; the sampler acts with the weights it is given."""

from __future__ import annotations

import multiprocessing
import threading

import pytest
import torch
from sampling_helpers import ROLLOUT, cartpole_sampling_cfg

from sample_factory.algo.runners.setup import initial_policy_weights, obtain_env_info
from sample_factory.algo.sampling.sampler import SerialSampler, as_policy_weights, sampling_policy_weights
from sample_factory.algo.utils.checkpoints import save_checkpoint
from sample_factory.algo.utils.rl_utils import samples_per_trajectory
from sample_factory.algo.utils.shared_buffers import PolicyWeights
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router


def _cfg(tmp_path, *extra: str):
    return cartpole_sampling_cfg(tmp_path, "smp", *extra)


def _loop() -> EventLoop:
    inbox = LocalInbox()
    return EventLoop("main", inbox, Router({}, {"main": inbox}), idle_timeout=0.001)


def test_serial_sampler_samples_trajectories_on_the_given_loop(tmp_path):
    cfg = _cfg(tmp_path)
    loop = _loop()
    got = []

    def on_trajectories(policy_id, trajectories):
        got.append((policy_id, trajectories))
        if sum(samples_per_trajectory(t) for _, t in got) >= 400:
            sampler.stop()

    sampler = SerialSampler(loop, None, None, cfg, None, on_trajectories=on_trajectories)
    sampler.init()
    main_thread = threading.current_thread()
    loop.run()  # ends once every component (the sampler's only) has stopped
    assert threading.current_thread() is main_thread and multiprocessing.active_children() == []
    assert sampler.error is None
    assert {p for p, _ in got} == {0}
    samples = sum(samples_per_trajectory(t) for _, t in got)
    assert samples >= 400 and sampler.env_steps[0] == samples  # CartPole: one frame per step
    first = got[0][1]
    assert first["rewards"].shape[1] == ROLLOUT and bool(first["valids"].all())
    episodes = sampler.recent_episodes
    assert episodes and all(reward == length for _, reward, length, *_ in episodes)  # CartPole pays +1 per step


def test_without_a_callback_trajectories_are_kept_until_taken(tmp_path):
    cfg = _cfg(tmp_path, "--num_workers=1")
    loop = _loop()
    sampler = SerialSampler(loop, None, None, cfg, obtain_env_info(cfg))
    sampler.init()
    loop.start_components()
    while not sampler.trajectories:
        loop.run_once()
    taken = sampler.take_trajectories()
    assert taken and not sampler.take_trajectories()
    sampler.stop()
    while loop.running:
        loop.run_once()
    loop.stop_components()


def test_serial_sampler_refuses_a_loop_that_already_has_a_runner(tmp_path):
    cfg = _cfg(tmp_path)
    loop = _loop()
    loop.router.component_loops[RUNNER] = "main"
    with pytest.raises(ValueError, match="loop of its own"):
        SerialSampler(loop, None, None, cfg, obtain_env_info(cfg))
    with pytest.raises(TypeError, match="'traj'"):
        SerialSampler(_loop(), object(), None, cfg, obtain_env_info(cfg))


def test_sampling_weights_come_from_the_latest_checkpoint(tmp_path):
    cfg = _cfg(tmp_path)
    env_info = obtain_env_info(cfg)
    fresh = sampling_policy_weights(cfg, env_info, serial=True)[0]
    assert fresh.latest_version() == 0
    trained = {k: torch.full_like(v, 0.5) if v.is_floating_point() else v for k, v in fresh.tensors.items()}
    save_checkpoint(cfg, 0, {"model": trained, "policy_version": 42}, train_step=3, env_steps=1000)
    loaded = sampling_policy_weights(cfg, env_info, serial=True)[0]
    assert loaded.latest_version() == 42
    assert all(torch.equal(loaded.tensors[k], v) for k, v in trained.items())


def test_given_weights_are_checked(tmp_path):
    cfg = _cfg(tmp_path)
    env_info = obtain_env_info(cfg)
    serial_weights = initial_policy_weights(cfg, env_info, serial=True)[0]

    class Server:  # the shape of model_sharing.ParameterServer: its PolicyWeights under `weights`
        def __init__(self, weights):
            self.weights = weights

    assert as_policy_weights(Server(serial_weights), 0, serial=True) is serial_weights
    with pytest.raises(ValueError, match="init"):
        as_policy_weights(Server(None), 0, serial=True)
    with pytest.raises(TypeError, match="ParameterServer or a shared_buffers.PolicyWeights"):
        as_policy_weights("weights", 0, serial=True)
    with pytest.raises(ValueError, match="serial_mode=False"):
        as_policy_weights(serial_weights, 0, serial=False)
    threading_locked = PolicyWeights(serial_weights.tensors, threading.Lock())
    with pytest.raises(ValueError, match="in-process lock"):
        as_policy_weights(threading_locked, 0, serial=False)
    with pytest.raises(ValueError, match=r"no entry for policies \[1\]"):
        sampling_policy_weights(_cfg(tmp_path, "--num_policies=2"), env_info, True, {0: serial_weights})


def test_sampling_never_imports_the_batcher_or_the_learner():
    """Samplers and learners meet only through the buffers the runner wires."""
    import ast
    import pathlib

    import sample_factory.algo.sampling as sampling

    for path in pathlib.Path(sampling.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert not name.startswith(
                    ("sample_factory.algo.learning.batcher", "sample_factory.algo.learning.learner")
                ), f"{path.name} imports {name}"
