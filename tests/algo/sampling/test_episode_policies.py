"""Episode bookkeeping of the rollout worker: reported episode stats and the agent -> policy draw."""

from __future__ import annotations

import numpy as np

from sample_factory.algo.sampling.env_runner import EpisodeStats, SplitState
from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo


def _finish(stats: EpisodeStats, info: dict) -> tuple:
    stats.reward[0], stats.length[0] = 3.0, 7  # what the worker summed: e.g. clipped rewards
    stats.episode_done(0, 0, info)
    return stats.finished[-1]


def test_own_sums_by_default_even_when_the_env_recorded_its_own():
    stats = EpisodeStats(1)
    assert _finish(stats, {"episode": {"r": np.float64(12.5), "l": np.int64(7)}})[1:3] == (3.0, 7)


def test_recorded_episode_statistics_win_with_the_flag():
    stats = EpisodeStats(1, env_episode_stats=True)
    policy, reward, length, objective, _ = _finish(stats, {"episode": {"r": np.array([12.5]), "l": np.array([9])}})
    assert (reward, length, objective) == (12.5, 9, 12.5)
    assert stats.reward[0] == 0.0 and stats.length[0] == 0


def test_recorded_statistics_missing_falls_back_to_own_sums():
    stats = EpisodeStats(1, env_episode_stats=True)
    assert _finish(stats, {})[1:3] == (3.0, 7)


def _worker(mix: bool, num_agents: int, num_policies: int = 4) -> RolloutWorker:
    cfg = default_cfg(env="fake")
    cfg.num_policies, cfg.pbt_mix_policies_in_one_env, cfg.seed = num_policies, mix, 3
    env_info = EnvInfo(obs_space=None, action_space=None, num_agents=num_agents)
    return RolloutWorker(cfg, env_info, 0, router=None, buffers=None, slot_owners=None)


def test_one_policy_per_env_even_when_agents_finish_at_different_times():
    worker, st = _worker(mix=False, num_agents=3), SplitState(6)  # two envs of three agents
    worker._assign_policies(st, range(6))
    for _ in range(50):  # agents end their episodes one by one, in every order
        worker._assign_policies(st, [int(a) for a in np.random.default_rng(_).permutation(6)[:2]])
        assert len(set(st.next_policy[:3])) == 1 and len(set(st.next_policy[3:])) == 1


def test_mixed_policies_draw_per_agent():
    worker, st = _worker(mix=True, num_agents=3, num_policies=8), SplitState(6)
    worker._assign_policies(st, range(6))
    seen = set()
    for _ in range(20):
        worker._assign_policies(st, range(6))
        seen.add(len(set(st.next_policy[:3])))
    assert max(seen) > 1  # agents of one env get different policies
