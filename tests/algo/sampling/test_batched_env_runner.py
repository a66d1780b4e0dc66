"""The batched runner over sequentially stacked envs writes exactly what the non-batched runner writes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from counting_envs import CountingEnv, TwoAgentEnv

from sample_factory.algo.sampling.env_runner import BatchedEnvRunner, EpisodeStats, NonBatchedEnvRunner
from sample_factory.algo.utils.shared_buffers import allocate_trajectories, numpy_views
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import extract_env_info
from sample_factory.envs.make_env import BatchedVecEnv, SequentialVectorizeWrapper

T = 6


def _single_agent_envs() -> list:
    return [
        CountingEnv(tag=0, length=2),
        CountingEnv(tag=1, length=3, truncate=True, step_info={"num_frames": 4}),
        CountingEnv(tag=2, length=4, step_info={"is_active": False}),
    ]


def _multi_agent_envs() -> list:
    return [TwoAgentEnv(tag=0, length=2), TwoAgentEnv(tag=1, length=3)]


def _run(make_envs, batched: bool):
    cfg = default_cfg()
    cfg.rollout = T
    envs = make_envs()
    env_info = extract_env_info(envs[0], cfg)
    num_actors = len(envs) * env_info.num_agents
    traj = allocate_trajectories(cfg, env_info, num_actors + 2, share=False)
    if batched:
        runner = BatchedEnvRunner(cfg, env_info, BatchedVecEnv(SequentialVectorizeWrapper(envs)), traj, EpisodeStats(0))
    else:
        runner = NonBatchedEnvRunner(cfg, env_info, envs, numpy_views(traj), EpisodeStats(0))
    runner.stats = EpisodeStats(num_actors)
    runner.state.slots[:] = np.arange(num_actors)[::-1] + 2  # slots need not be in actor order
    runner.reset([None] * len(envs))
    rng = np.random.default_rng(0)
    for t in range(T):
        traj["actions"][torch.from_numpy(runner.state.slots), t] = torch.from_numpy(rng.integers(0, 3, num_actors))
        runner.step()
    return runner, traj


@pytest.mark.parametrize("make_envs", [_single_agent_envs, _multi_agent_envs], ids=["single_agent", "multi_agent"])
def test_batched_runner_matches_non_batched_runner(make_envs) -> None:
    batched, traj_b = _run(make_envs, batched=True)
    plain, traj_p = _run(make_envs, batched=False)
    for key in ("rewards", "dones", "time_outs", "valids", "actions"):
        assert torch.equal(traj_b[key], traj_p[key]), key
    assert torch.equal(traj_b["obs"]["obs"], traj_p["obs"]["obs"])
    assert batched.state.frames.tolist() == plain.state.frames.tolist()
    assert batched.stats.finished == plain.stats.finished and batched.stats.finished
    assert batched.stats.reward.tolist() == plain.stats.reward.tolist()
    assert batched.stats.length.tolist() == plain.stats.length.tolist()


def test_episode_stats_time_outs_inactive_actors_and_frames_are_recorded() -> None:
    runner, traj = _run(_single_agent_envs, batched=True)
    slot = {actor: int(runner.state.slots[actor]) for actor in range(3)}
    assert traj["dones"][slot[0]].tolist() == [0, 1, 0, 1, 0, 1]
    assert traj["time_outs"][slot[1]].tolist() == [0, 0, 1, 0, 0, 1], "truncation without termination"
    assert traj["time_outs"][slot[0]].sum() == 0
    assert not traj["valids"][slot[2]].any() and traj["valids"][slot[0]].all()
    assert runner.state.frames.tolist() == [T, 4 * T, T], "num_frames from the infos, else the frameskip"
    finished = runner.stats.finished
    # env 0: episodes of rewards 1 + 2 = 3, three times; env 1: 11 + 12 + 13 = 36, twice; env 2: inactive, 0
    assert sorted((r, n, obj) for _, r, n, obj, _ in finished) == sorted(
        [(3.0, 2, 100.0)] * 3 + [(36.0, 3, 101.0)] * 2 + [(0.0, 0, 102.0)]
    )
    assert {extra["tag"] for *_, extra in finished} == {0.0, 1.0, 2.0}
    # the observation after an ended episode is the first of the next one
    assert traj["obs"]["obs"][slot[0], 2].tolist() == [0.0, 0.0]
    assert traj["obs"]["obs"][slot[1], 1].tolist() == [1.0, 1.0]


def test_last_dones_tell_the_worker_which_actors_ended() -> None:
    runner, _ = _run(_single_agent_envs, batched=True)
    assert runner.last_dones.tolist() == [True, True, False]
