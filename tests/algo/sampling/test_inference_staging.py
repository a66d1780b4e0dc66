"""The inference worker's device and gather step: its policy's device, and the staged gather (the GPU path, run on the
CPU with staging forced on) keeping every step of the hot path exact."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
from hot_path_harness import HotPath, all_problems, env_action_problems, hot_path_cfg

from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.sampling.inference_worker import InferenceWorker
from sample_factory.algo.utils.context import reset_global_context
from sample_factory.algo.utils.host_staging import StagedGather

ENV_INFO = SimpleNamespace(obs_space=gym.spaces.Box(-1.0, 1.0, (4,), np.float32))  # the workers read only this


@pytest.fixture(autouse=True)
def clean_context() -> Iterator[None]:
    yield
    reset_global_context()


def test_each_inference_worker_computes_on_its_policys_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two visible GPUs (faked): policy 1's workers use cuda:1, like its learner, and stage through pinned memory."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    cfg = hot_path_cfg(device="gpu", num_policies=3)
    traj = {"obs": {"obs": torch.zeros(1, 2, 4)}}
    workers = [
        InferenceWorker(cfg, PolicyWiring(p, ENV_INFO, traj, None, None), j, None) for p in range(3) for j in range(2)
    ]
    assert [w.device for w in workers] == [torch.device("cuda", i) for i in (0, 0, 1, 1, 0, 0)]
    assert all(w.stager.staged and w.stager.pin_memory and w.stager.device == w.device for w in workers)


def test_on_the_cpu_the_gather_is_not_staged() -> None:
    worker = InferenceWorker(hot_path_cfg(device="cpu"), PolicyWiring(0, ENV_INFO, {"obs": {}}, None, None), 0, None)
    assert worker.device == torch.device("cpu") and not worker.stager.staged


@pytest.mark.parametrize("batched", [False, True], ids=["non_batched", "batched"])
def test_staged_gather_keeps_every_step_exact(batched: bool) -> None:
    hot = HotPath(hot_path_cfg(batched_sampling=batched), multi_agent=True)
    for worker in hot.inference:
        worker.stager = StagedGather("cpu", staged=True)
    actors = hot.cfg.num_workers * hot.cfg.num_envs_per_worker * hot.env_info.num_agents
    hot.start().pump(lambda: hot.num_trajectories() >= 4 * actors)
    trajectories = hot.trajectories()
    problems = all_problems(trajectories) + env_action_problems(hot, trajectories)
    assert not problems, "\n".join(problems[:20])
    assert all(worker.stager.buffers for worker in hot.inference), "the staged path was not taken"
