"""Sample Factory 2's names of the sampling side: action preprocessing, sampling_utils, report handlers, the role and
sampler classes' constructors, and the sampling APIs' names (EvalSamplingAPI keeps the finished episodes)."""

from __future__ import annotations

import types
from collections import deque

import gymnasium as gym
import numpy as np
import pytest
import torch
from sampling_helpers import cartpole_sampling_cfg

from sample_factory.algo.runners import sf2_constructors
from sample_factory.algo.runners.setup import obtain_env_info
from sample_factory.algo.sampling import evaluation_sampling_api, simplified_sampling_api
from sample_factory.algo.sampling.batched_sampling import (
    BatchedVectorEnvRunner,
    preprocess_actions,
    process_action_space,
)
from sample_factory.algo.sampling.evaluation_sampling_api import EvalSamplingAPI
from sample_factory.algo.sampling.inference_worker import (
    InferenceWorker,
    InferenceWorkerComponent,
    init_inference_process,
)
from sample_factory.algo.sampling.non_batched_sampling import ActorState, NonBatchedVectorEnvRunner
from sample_factory.algo.sampling.rollout_worker import RolloutWorker, init_rollout_worker_process
from sample_factory.algo.sampling.sampler import AbstractSampler, ParallelSampler, Sampler, SerialSampler
from sample_factory.algo.sampling.sampling_utils import (
    VectorEnvRunner,
    record_episode_statistics_wrapper_stats,
    rollout_worker_device,
)
from sample_factory.algo.sampling.stats import samples_stats_handler, stats_msg_handler, timing_msg_handler
from sample_factory.algo.sampling.sync_sampling_api import SyncSamplingAPI
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router
from sample_factory.utils.misc import ExperimentStatus


# ---- actions for a batched env
def test_process_action_space_discrete_and_continuous() -> None:
    discrete = torch.tensor([[2.0], [0.0], [1.0]])
    out = process_action_space(discrete, gpu_actions=False, is_discrete=True)
    assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.tolist() == [2, 0, 1]
    as_tensor = process_action_space(discrete, False, True, to_numpy=False)
    assert isinstance(as_tensor, torch.Tensor) and as_tensor.shape == (3,)
    box = torch.rand(3, 2)
    np.testing.assert_array_equal(process_action_space(box, False, False), box.numpy())
    assert process_action_space(box, gpu_actions=True, is_discrete=False) is box  # the env takes device tensors


def test_preprocess_actions_per_space() -> None:
    rows = torch.tensor([[1.0, 0.5, -0.5], [2.0, 0.1, 0.2]])
    tuple_info = EnvInfo(
        gym.spaces.Box(-1, 1, (2,)), gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,))])
    )
    discrete, box = preprocess_actions(tuple_info, rows)
    assert discrete.tolist() == [1, 2]
    np.testing.assert_allclose(box, [[0.5, -0.5], [0.1, 0.2]])
    discrete_info = EnvInfo(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(3))
    assert preprocess_actions(discrete_info, rows[:, :1], to_numpy=False).tolist() == [1, 2]
    dict_info = EnvInfo(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Dict({"a": gym.spaces.Discrete(2)}))
    with pytest.raises(TypeError, match="Discrete, Box, MultiDiscrete or a Tuple"):
        preprocess_actions(dict_info, rows)


# ---- sampling_utils
def test_vector_env_runner_is_the_base_with_sf2_parameters() -> None:
    assert issubclass(BatchedVectorEnvRunner, VectorEnvRunner)
    assert issubclass(NonBatchedVectorEnvRunner, VectorEnvRunner)
    cfg = default_cfg(env="x")
    cfg.num_envs_per_worker, cfg.worker_num_splits = 4, 2
    info = EnvInfo(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2), num_agents=2)
    runner = VectorEnvRunner(cfg, info, worker_idx=1, split_idx=1, buffer_mgr=None, sampling_device="cpu")
    assert (runner.num_envs, runner.num_actors, runner.worker_idx, runner.split_idx) == (2, 4, 1, 1)
    with pytest.raises(ValueError, match="sampling_device='cpu'"):
        VectorEnvRunner(cfg, info, 0, 0, None, "meta")


def test_rollout_worker_device_is_host_memory() -> None:
    info = EnvInfo(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2), gpu_observations=True)
    assert rollout_worker_device(3, default_cfg(env="x"), info) == torch.device("cpu")


def test_record_episode_statistics_wrapper_stats() -> None:
    assert record_episode_statistics_wrapper_stats({"episode": {"r": np.array([3.5]), "l": np.int64(7)}}) == (3.5, 7)
    assert record_episode_statistics_wrapper_stats({"episode": {"r": 2.0}}) == (2.0, 0)
    assert record_episode_statistics_wrapper_stats({}) is None
    assert record_episode_statistics_wrapper_stats({"episode": "x"}) is None


# ---- report handlers
def test_stats_handlers_update_the_observer() -> None:
    observer = types.SimpleNamespace(stats={"a": 0}, avg_stats={}, samples_collected=[0, 0])
    stats_msg_handler(observer, {"stats": {"a": 3, "b": 4}})
    assert observer.stats == {"a": 3, "b": 4}
    for value in (0.5, 0.25):
        timing_msg_handler(observer, {"timing": {"step": value}})
    assert isinstance(observer.avg_stats["step"], deque) and list(observer.avg_stats["step"]) == [0.5, 0.25]
    samples_stats_handler(observer, {"samples_collected": 64}, policy_id=1)
    samples_stats_handler(observer, {"samples_collected": 16}, 1)
    assert observer.samples_collected == [0, 80]
    per_policy = types.SimpleNamespace(samples_collected={})
    samples_stats_handler(per_policy, {"samples_collected": 5}, 2)
    assert per_policy.samples_collected == {2: 5}


# ---- constructors wired to Sample Factory 2's plumbing
def _loop() -> EventLoop:
    router = Router({}, {"main": LocalInbox()})
    return EventLoop("main", router.inboxes["main"], router)


def test_role_classes_with_sf2_parameters_name_the_supported_ways() -> None:
    with pytest.raises(
        TypeError, match=r"RolloutWorker\(event_loop, worker_idx, buffer_mgr, inference_queues.*SerialSampler"
    ):
        RolloutWorker(_loop(), 0, object(), [], default_cfg(env="x"), None)
    with pytest.raises(TypeError, match=r"InferenceWorker\(event_loop, policy_id, worker_idx.*SyncSamplingAPI"):
        InferenceWorker(_loop(), 0, 0, object(), object(), object(), default_cfg(env="x"), None)
    with pytest.raises(TypeError, match="NonBatchedVectorEnvRunner"):
        ActorState(*([None] * 14))
    assert issubclass(InferenceWorker, InferenceWorkerComponent)


def test_init_processes_apply_their_kinds_settings(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(sf2_constructors, "set_process_options", lambda *args: calls.append(args))
    cfg = default_cfg(env="x")
    init_rollout_worker_process(None, types.SimpleNamespace(name="rollout_w3", cfg=cfg, worker_idx=3))
    inference = types.SimpleNamespace(name="inference_p1_w0", cfg=cfg, worker_idx=0, policy_id=1)
    init_inference_process(None, inference)
    kinds = [(spec.kind, spec.name, spec.worker_idx, spec.policy_id, worker_idx) for _, spec, worker_idx, _ in calls]
    assert kinds == [("rollout", "rollout_w3", 3, None, 3), ("inference", "inference_p1_w0", 0, 1, 0)]


def test_sampler_classes() -> None:
    assert issubclass(SerialSampler, Sampler) and issubclass(Sampler, AbstractSampler)
    cfg = default_cfg(env="x")
    sampler = AbstractSampler(_loop(), None, None, cfg, None, unique_name="mine")
    assert (sampler.cfg, sampler.unique_name, sampler.buffer_mgr) == (cfg, "mine", None)
    with pytest.raises(NotImplementedError, match="init"):
        sampler.init()
    with pytest.raises(TypeError, match="SyncSamplingAPI.*run_sampler.*SerialSampler"):
        ParallelSampler(_loop(), None, None, cfg, None)


def test_sampling_loops_name_their_api() -> None:
    with pytest.raises(TypeError, match=r"SyncSamplingAPI\(cfg, env_info\)"):
        simplified_sampling_api.SamplingLoop(default_cfg(env="x"), None)
    with pytest.raises(TypeError, match=r"EvalSamplingAPI\(cfg, env_info\)"):
        evaluation_sampling_api.SamplingLoop(default_cfg(env="x"), None, print_episode_info=True)
    assert simplified_sampling_api.SyncSamplingAPI is SyncSamplingAPI


# ---- the sampling APIs
def test_sync_sampling_api_takes_buffer_mgr_third(tmp_path) -> None:
    cfg = cartpole_sampling_cfg(tmp_path, "order", "--serial_mode=True")
    weights = {0: object()}
    sampler = SyncSamplingAPI(cfg, None, None, weights)
    assert sampler.param_servers is weights


def test_eval_sampling_api_keeps_finished_episodes(tmp_path) -> None:
    cfg = cartpole_sampling_cfg(tmp_path, "eval", "--serial_mode=True")
    sampler = EvalSamplingAPI(cfg, obtain_env_info(cfg))
    sampler.start()
    try:
        while len(sampler.eval_episodes.get(0, [])) < 3:
            assert sampler.get_trajectories_sync() is not None
    finally:
        assert sampler.stop() == ExperimentStatus.SUCCESS
    episodes = sampler.eval_episodes[0]
    assert len(episodes) >= 3
    for episode in episodes:
        assert episode["reward"] == pytest.approx(episode["len"])  # CartPole: +1 per step
    assert sampler.eval_env_steps[0] >= sum(episode["len"] for episode in episodes[:3])
    assert set(sampler.eval_episodes) == {0}
