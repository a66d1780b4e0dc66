"""Sample Factory 2's per-split runner names: create a split's envs, step them, find the steps in the slots."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.algo.sampling import env_runner
from sample_factory.algo.sampling.batched_sampling import BatchedVectorEnvRunner
from sample_factory.algo.sampling.decorrelation import decorrelate
from sample_factory.algo.sampling.non_batched_sampling import NonBatchedVectorEnvRunner
from sample_factory.algo.utils.context import reset_global_context
from sample_factory.algo.utils.shared_buffers import allocate_trajectories
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import extract_env_info
from sample_factory.envs.env_utils import TrainingInfoInterface, register_env

RUNNERS = [BatchedVectorEnvRunner, NonBatchedVectorEnvRunner]


class CurriculumCartPole(gym.Wrapper, TrainingInfoInterface):
    def __init__(self, env: gym.Env) -> None:
        gym.Wrapper.__init__(self, env)
        TrainingInfoInterface.__init__(self)


@pytest.fixture
def cartpole_cfg():
    reset_global_context()
    register_env("CartPole-v1", lambda name, cfg=None, env_config=None, render_mode=None: gym.make(name))
    register_env("curriculum_cartpole", lambda *args, **kwargs: CurriculumCartPole(gym.make("CartPole-v1")))
    cfg = default_cfg(env="CartPole-v1")
    cfg.rollout, cfg.seed, cfg.num_envs_per_worker = 4, 3, 4
    yield cfg
    reset_global_context()


def _env_info(cfg):
    return extract_env_info(gym.make("CartPole-v1"), cfg)


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_steps_are_written_into_a_private_buffer(cartpole_cfg, runner_cls) -> None:
    runner = runner_cls(cartpole_cfg, _env_info(cartpole_cfg), 2, 0, 1, None, "cpu", [None])
    runner.init()
    try:
        traj = runner.trajectories()
        assert traj["obs"]["obs"].shape == (2, 5, 4) and runner.t == 0
        assert traj["obs"]["obs"][:, 0].abs().sum() > 0, "reset observations at step 0"
        for t in range(3):
            dones = runner.step(torch.tensor([t % 2, 1 - t % 2]))
            assert dones.shape == (2,) and dones.dtype == bool
        traj = runner.trajectories()
        assert traj["rewards"][:, :3].tolist() == [[1.0] * 3] * 2 and traj["valids"][:, :3].all()
        assert traj["actions"][:, :3].tolist() == [[0, 1, 0], [1, 0, 1]]
        assert not torch.equal(traj["obs"]["obs"][:, 1], traj["obs"]["obs"][:, 0])
        assert runner.t == 3
    finally:
        runner.close()


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_both_flavours_see_the_same_seeded_envs(cartpole_cfg, runner_cls) -> None:
    cartpole_cfg.decorrelate_envs_on_one_worker = False  # random steps first: non-batched envs only
    runners = [cls(cartpole_cfg, _env_info(cartpole_cfg), 2, 1, 0, None, "cpu", None) for cls in RUNNERS]
    for runner in runners:
        runner.init()
        for _ in range(5):  # past the end of the 4-step rollout: a new rollout starts in the same slots
            runner.step(torch.tensor([1, 1]))
    batched, plain = (runner.trajectories() for runner in runners)
    assert torch.equal(batched["obs"]["obs"], plain["obs"]["obs"])
    assert runners[0].t == 1
    for runner in runners:
        runner.close()


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_a_shared_buffer_is_used_at_the_split_s_slots(cartpole_cfg, runner_cls) -> None:
    env_info = _env_info(cartpole_cfg)
    shared = allocate_trajectories(cartpole_cfg, env_info, 16, share=False)
    runner = runner_cls(cartpole_cfg, env_info, 2, 1, 1, shared, "cpu", None)  # worker 1 split 1: slots 6, 7
    runner.init()
    runner.step(np.array([0, 0]))
    assert runner.first_slot == 6 and runner.runner.state.slots.tolist() == [6, 7]
    written = (shared["rewards"][:, 0] != 0).nonzero().flatten().tolist()
    assert written == [6, 7]
    runner.close()
    with pytest.raises(ValueError, match="buffer_mgr has 16 trajectory slots"):
        runner_cls(cartpole_cfg, env_info, 2, 4, 0, shared, "cpu", None)  # slots 16, 17


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_training_info_reaches_envs_that_take_it(cartpole_cfg, runner_cls) -> None:
    cartpole_cfg.env = "curriculum_cartpole"
    runner = runner_cls(cartpole_cfg, _env_info(cartpole_cfg), 2, 0, 0, None, "cpu", [{"approx_total_steps": 7}])
    runner.init()
    assert [env.training_info for env in runner.envs] == [{"approx_total_steps": 7}] * 2
    runner.update_training_info([{"approx_total_steps": 9}])
    assert runner.envs[1].training_info == {"approx_total_steps": 9}
    runner.close()


def test_misuse_is_explained(cartpole_cfg) -> None:
    with pytest.raises(ValueError, match="sampling_device='cuda' is not supported"):
        BatchedVectorEnvRunner(cartpole_cfg, _env_info(cartpole_cfg), 2, 0, 0, None, "cuda", None)
    runner = NonBatchedVectorEnvRunner(cartpole_cfg, _env_info(cartpole_cfg), 2, 0, 0, None, "cpu", None)
    with pytest.raises(RuntimeError, match=r"init\(\) must be called"):
        runner.step(torch.tensor([0, 0]))


@pytest.mark.parametrize("runner_cls", RUNNERS)
def test_non_batched_envs_take_random_steps_by_their_index_in_the_worker(cartpole_cfg, runner_cls, monkeypatch):
    taken = []

    def recording(env, obs, num_steps, actions, check):
        taken.append(num_steps)
        return decorrelate(env, obs, num_steps, actions, check)

    monkeypatch.setattr(env_runner, "decorrelate", recording)
    runner = runner_cls(cartpole_cfg, _env_info(cartpole_cfg), 2, 0, 1, None, "cpu", None)  # split 1: envs 2 and 3
    runner.init()
    try:
        expected = [] if runner_cls.batched else [2 * cartpole_cfg.rollout, 3 * cartpole_cfg.rollout]
        assert taken == expected
    finally:
        runner.close()
