"""Sample Factory 2's runtime helpers at ``algo.utils``: agent-policy mapping, heartbeats, parameter clients, the
env-info cache helpers and normaliser summaries."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.algo.utils.agent_policy_mapping import AgentPolicyMapping
from sample_factory.algo.utils.env_info import check_env_info, env_info_cache_filename, extract_env_info
from sample_factory.algo.utils.heartbeat import HeartbeatStoppableEventLoopObject
from sample_factory.algo.utils.model_sharing import (
    ParameterClientAsync,
    ParameterClientSerial,
    ParameterServer,
    make_parameter_client,
)
from sample_factory.algo.utils.running_mean_std import RunningMeanStdInPlace, running_mean_std_summaries
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import RUNNER, Component, EventLoop, LocalInbox, Router
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.utils.timing import Timing

OBS = gym.spaces.Box(-1, 1, (3,), np.float32)


def _cfg(**flags: object):
    cfg = default_cfg(env="x")
    for name, value in flags.items():
        setattr(cfg, name, value)
    return cfg


def test_agent_policy_mapping_shares_or_mixes_policies() -> None:
    info = EnvInfo(OBS, gym.spaces.Discrete(2), num_agents=3)
    shared = AgentPolicyMapping(_cfg(num_policies=4, pbt_mix_policies_in_one_env=False), info, random.Random(0))
    for env in range(20):
        first = shared.get_policy_for_agent(0, env, env)
        assert [shared.get_policy_for_agent(a, env, env) for a in (1, 2)] == [first, first]
    mixed = AgentPolicyMapping(_cfg(num_policies=4, pbt_mix_policies_in_one_env=True), info, random.Random(0))
    draws = {tuple(mixed.get_policy_for_agent(a, 0, 0) for a in range(3)) for _ in range(50)}
    assert any(len(set(d)) > 1 for d in draws) and all(0 <= p < 4 for d in draws for p in d)
    fixed = AgentPolicyMapping(_cfg(num_policies=2, agent_to_policy="1,0,1"), info)
    assert [fixed.get_policy_for_agent(a, 0, 5) for a in range(3)] == [1, 0, 1]
    with pytest.raises(ValueError, match="agent_idx=3"):
        fixed.get_policy_for_agent(3, 0, 0)


class _Runner(Component):
    def __init__(self, router: Router) -> None:
        super().__init__(RUNNER, router)
        self.beats: list[str] = []

    def on_heartbeat(self, name: str) -> None:
        self.beats.append(name)
        if len(self.beats) == 2:
            self.send("user_component", "on_stop_requested")
            self.loop.component_stopped(self.name)


def test_heartbeats_reach_the_runner_and_stop_ends_the_component() -> None:
    router = Router({RUNNER: "main", "user_component": "main"}, {"main": LocalInbox()})
    loop = EventLoop("main", router.inboxes["main"], router, idle_timeout=0.001)
    runner = _Runner(router)
    loop.add_component(runner)
    component = HeartbeatStoppableEventLoopObject(loop, "user_component", interval_sec=0.001)
    loop.run()  # returns once both components stopped: the runner after two beats, ours on its stop request
    assert runner.beats == ["user_component", "user_component"] and component.heartbeats_sent == 2
    with pytest.raises(ValueError, match="interval_sec"):
        HeartbeatStoppableEventLoopObject(loop, "other", interval_sec=0)


def _model_and_server(serial: bool):
    cfg = _cfg(use_rnn=False, normalize_input=False)
    info = EnvInfo(OBS, gym.spaces.Discrete(2))
    learner_model = create_actor_critic(cfg, OBS, gym.spaces.Discrete(2))
    server = ParameterServer(0, torch.zeros(1, dtype=torch.int64), serial_mode=serial)
    server.init(learner_model, policy_version=3, device="cpu")
    return cfg, info, learner_model, server


def test_serial_client_acts_with_the_learner_model() -> None:
    cfg, info, learner_model, server = _model_and_server(serial=True)
    client = make_parameter_client(True, server, cfg, info, None)
    assert isinstance(client, ParameterClientSerial)
    with pytest.raises(RuntimeError, match="on_weights_initialized"):
        client.actor_critic  # noqa: B018 (the property raises)
    client.on_weights_initialized(learner_model.state_dict(), "cpu", 3)
    assert client.actor_critic is learner_model and client.policy_version == 3
    server.update_weights(4)
    client.ensure_weights_updated()
    assert client.policy_version == 4


def test_async_client_reloads_only_newer_weights() -> None:
    cfg, info, learner_model, server = _model_and_server(serial=False)
    timing = Timing("test")
    client = make_parameter_client(False, server, cfg, info, timing)
    assert isinstance(client, ParameterClientAsync)
    client.on_weights_initialized(learner_model.state_dict(), "cpu", 3)
    assert client.actor_critic is not learner_model
    first = next(iter(learner_model.parameters()))
    with torch.no_grad():
        first.add_(1.0)
    client.ensure_weights_updated()
    assert client.num_policy_updates == 0, "no newer version published yet"
    server.update_weights(7)
    client.ensure_weights_updated()
    assert client.policy_version == 7 and client.num_policy_updates == 1
    torch.testing.assert_close(next(iter(client.actor_critic.parameters())), first.detach())


class _Env(gym.Env):
    observation_space = OBS
    action_space = gym.spaces.Discrete(2)


def test_env_info_cache_helpers(tmp_path) -> None:
    cfg = _cfg(train_dir=str(tmp_path), experiment="exp")
    cache = env_info_cache_filename(cfg)
    assert cache == str(tmp_path / "exp" / "env_info.pkl") and not (tmp_path / "exp").exists()
    info = extract_env_info(_Env(), cfg)
    check_env_info(_Env(), info, cfg)  # unchanged env: nothing happens
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "env_info.pkl").write_bytes(b"stale")

    class Changed(_Env):
        action_space = gym.spaces.Discrete(5)

    with pytest.raises(ValueError, match="action_space: Discrete\\(2\\) != Discrete\\(5\\)"):
        check_env_info(Changed(), info, cfg)
    assert not (tmp_path / "exp" / "env_info.pkl").exists()


def test_running_mean_std_summaries() -> None:
    normalizer = RunningMeanStdInPlace((2,))
    normalizer.running_mean.copy_(torch.tensor([1.0, 3.0], dtype=torch.float64))
    normalizer.running_var.copy_(torch.tensor([4.0, 16.0], dtype=torch.float64))
    summaries = running_mean_std_summaries(torch.nn.ModuleDict({"obs": normalizer}))
    assert summaries == {"obs_running_mean": pytest.approx(2.0), "obs_running_std": pytest.approx(3.0)}
    names = set(running_mean_std_summaries(normalizer))
    assert names == {"running_mean_std_running_mean", "running_mean_std_running_std"}
