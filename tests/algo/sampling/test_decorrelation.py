"""--decorrelate_envs_on_one_worker: env k of a worker takes k * rollout random steps before sampling begins."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from counting_envs import CountingEnv, TwoAgentEnv
from sampling_helpers import ROLLOUT, OneWorkerLoop

from sample_factory.algo.sampling import env_runner
from sample_factory.algo.sampling.decorrelation import RandomActions, decorrelate, decorrelation_steps
from sample_factory.algo.sampling.env_runner import EpisodeStats, NonBatchedEnvRunner
from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.algo.utils.shared_buffers import allocate_trajectories, numpy_views
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.contract_errors import EnvContractError
from sample_factory.envs.env_info import extract_env_info
from sample_factory.messaging.event_loop import LocalInbox

RUNNER_ROLLOUT = 4


def _cfg(**overrides):
    cfg = default_cfg()
    cfg.rollout = RUNNER_ROLLOUT
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


def _runner(envs: list, cfg=None):
    cfg = cfg or _cfg()
    env_info = extract_env_info(envs[0], cfg)
    num_actors = len(envs) * env_info.num_agents
    traj = numpy_views(allocate_trajectories(cfg, env_info, num_actors, share=False))
    runner = NonBatchedEnvRunner(cfg, env_info, envs, traj, EpisodeStats(0))
    runner.stats = EpisodeStats(num_actors)
    runner.state.slots[:] = np.arange(num_actors)
    return runner, traj


def test_env_k_of_a_worker_takes_k_rollouts_of_steps() -> None:
    cfg = _cfg()
    assert [decorrelation_steps(cfg, k) for k in range(4)] == [0, 4, 8, 12]


@pytest.mark.parametrize("flag", ["decorrelate_envs_on_one_worker", "batched_sampling"])
def test_no_steps_when_off_or_with_batched_sampling(flag: str) -> None:
    cfg = _cfg(**{flag: flag == "batched_sampling"})
    assert [decorrelation_steps(cfg, k) for k in range(3)] == [0, 0, 0]


def test_runner_steps_each_env_its_share_and_samples_from_there() -> None:
    envs = [CountingEnv(tag=0, length=100), CountingEnv(tag=1, length=100), CountingEnv(tag=2, length=100)]
    runner, traj = _runner(envs)
    runner.reset([1, 2, 3], [0, 4, 8])
    assert [len(env.actions) for env in envs] == [0, 4, 8]
    assert traj["obs"]["obs"][:, 0, 0].tolist() == [0.0, 4.0, 8.0], "step 0 of each slot: where its env now is"
    assert all(0 <= a < 3 for env in envs for a in env.actions), "actions drawn from the action space"
    # nothing of those steps is counted: no episode reward or length so far
    assert runner.stats.reward.tolist() == [0.0] * 3 and runner.stats.length.tolist() == [0] * 3


def test_an_episode_ending_during_the_steps_is_reset_and_not_reported() -> None:
    env = CountingEnv(length=3, truncate=True)
    runner, traj = _runner([env])
    runner.reset([5], [7])  # ends after steps 3 and 6, one step into the third episode
    assert env.seeds == [5, None, None], "seeded first reset, then plain resets as during sampling"
    assert traj["obs"]["obs"][0, 0, 0] == 1.0
    assert runner.stats.finished == []


def test_multi_agent_envs_get_one_action_per_agent() -> None:
    env = TwoAgentEnv(length=3)
    runner, traj = _runner([env])
    runner.reset([None], [5])
    assert len(env.actions) == 5 and all(len(actions) == 2 for actions in env.actions)
    assert traj["obs"]["obs"][:2, 0, 0].tolist() == [2.0, 2.0], "the env reset itself after 3 steps"


def test_seeded_runs_draw_the_same_random_actions() -> None:
    drawn = []
    for _ in range(2):
        env = CountingEnv(length=100, action_space=gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32))
        runner, _ = _runner([env])
        runner.reset([11], [6])
        drawn.append(np.stack(env.actions))
    assert np.array_equal(drawn[0], drawn[1])
    assert len({tuple(row) for row in drawn[0]}) == 6, "random, not one repeated action"


def test_random_actions_leave_the_env_info_space_alone() -> None:
    env = CountingEnv()
    info = extract_env_info(env, _cfg())
    state = info.action_space.np_random.bit_generator.state
    RandomActions(info, seed=3).sample()
    assert info.action_space.np_random.bit_generator.state == state


class _FourTupleEnv(CountingEnv):
    def step(self, action):
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, info


def test_an_env_breaking_the_step_contract_is_reported_during_those_steps() -> None:
    runner, _ = _runner([_FourTupleEnv(length=100)])
    with pytest.raises(EnvContractError, match="step"):
        runner.reset([None], [2])


def test_a_worker_steps_its_second_env_one_rollout_first(tmp_path, monkeypatch) -> None:
    taken = []

    def recording(env, obs, num_steps, actions, check):
        taken.append(num_steps)
        return decorrelate(env, obs, num_steps, actions, check)

    monkeypatch.setattr(env_runner, "decorrelate", recording)
    setup = OneWorkerLoop(tmp_path, LocalInbox())  # one worker, one CartPole env in each of two splits
    try:
        assert setup.worker._decorrelation_steps() == [0, ROLLOUT]
        assert taken == [ROLLOUT], "only the second env, by one rollout"
    finally:
        setup.close()


def test_a_worker_restarted_after_a_crash_takes_no_random_steps(tmp_path) -> None:
    setup = OneWorkerLoop(tmp_path, LocalInbox(), restart=RestartInfo(incarnation=1, withheld_slots={}))
    try:
        assert setup.worker._decorrelation_steps() == [0, 0]
    finally:
        setup.close()
