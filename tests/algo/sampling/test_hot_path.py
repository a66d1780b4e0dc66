"""The sampling hot path, exactly: rollout worker, env runners and inference worker on one in-process loop.

Each test runs the real components over envs whose observations say which env, agent and step they come from
(see ``tests/hot_path_harness.py``) and checks every recorded trajectory slot: the observation, action, reward, done
and RNN state of step ``t`` describe one env step, the next rollout continues where the last one stopped, ended
episodes restart, inactive agents are marked, and each actor's steps reach its own policy.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from hot_path_harness import (
    EchoPolicy,
    FakeWeights,
    HotPath,
    Recorder,
    TraceEnv,
    all_problems,
    env_action_problems,
    hot_path_cfg,
    is_active,
    step_reward,
)

from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.sampling.inference_worker import InferenceWorker
from sample_factory.algo.utils.context import reset_global_context
from sample_factory.algo.utils.shared_buffers import allocate_trajectories
from sample_factory.envs.env_info import extract_env_info
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router

ROLLOUTS_PER_ACTOR = 5


@pytest.fixture(autouse=True)
def clean_context() -> Iterator[None]:
    """HotPath registers its env in the global context; leave the context empty for the next test."""
    yield
    reset_global_context()


def _run(hot: HotPath, rollouts_per_actor: int = ROLLOUTS_PER_ACTOR) -> list[tuple[int, dict]]:
    actors = hot.cfg.num_workers * hot.cfg.num_envs_per_worker * hot.env_info.num_agents
    hot.start().pump(lambda: hot.num_trajectories() >= rollouts_per_actor * actors)
    return hot.trajectories()


def _assert_exact(hot: HotPath, trajectories: list[tuple[int, dict]]) -> None:
    problems = all_problems(trajectories) + env_action_problems(hot, trajectories)
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("batched", [False, True], ids=["non_batched", "batched"])
@pytest.mark.parametrize("multi_agent", [False, True], ids=["single_agent", "multi_agent"])
def test_every_step_lands_in_one_slot_and_time_index(batched: bool, multi_agent: bool) -> None:
    """Obs, action, reward, done, time-out, validity, value and RNN state of step t all describe the same env step;
    each actor's rollouts tile its env steps (carry-over of the last observation and RNN state)."""
    hot = HotPath(hot_path_cfg(batched_sampling=batched), multi_agent=multi_agent)
    trajectories = _run(hot)
    _assert_exact(hot, trajectories)
    actors = 4 * hot.env_info.num_agents
    assert len(trajectories) >= ROLLOUTS_PER_ACTOR * actors
    assert hot.batchers[0].frames == 4 * len(trajectories), "one frame per step (frameskip 1)"
    # the situations the checks are about really occurred
    steps = [tr for _, tr in trajectories]
    assert any(tr["obs"][0, 3] > 0 and tr["rnn_states"][0, 0] > 0 for tr in steps), "an episode crossed a rollout"
    assert any(tr["dones"][:-1].any() for tr in steps), "an episode ended inside a rollout (auto-reset)"
    assert any(tr["time_outs"].any() for tr in steps) and any((tr["dones"] > tr["time_outs"]).any() for tr in steps)
    if multi_agent:
        assert any(not tr["valids"].all() for tr in steps), "an inactive agent step was recorded"


@pytest.mark.parametrize("batched", [False, True], ids=["non_batched", "batched"])
def test_episode_stats_count_only_active_steps(batched: bool) -> None:
    hot = HotPath(hot_path_cfg(batched_sampling=batched), multi_agent=True)
    _run(hot)
    for worker in hot.workers:
        worker.on_stop_requested()
    hot.loop.run_once()  # deliver the final stats
    finished = [episode for (episodes,) in hot.runner.received("on_episodes_finished") for episode in episodes]
    assert finished
    expected = []
    for env_id in hot.envs:
        length, k = 2 + env_id % 3, 0
        while k + length <= hot.envs[env_id].k:
            for agent in (0, 1):
                active = [step for step in range(k, k + length) if is_active(agent, step)]
                expected.append((sum(step_reward(env_id, agent, step) for step in active), len(active)))
            k += length
    assert sorted((reward, length) for _, reward, length, *_ in finished) == sorted(expected)


def test_multi_policy_routing_across_workers() -> None:
    """Two workers, two policies drawn per episode: each step is computed by the inference worker of the slot's
    policy, each slot goes to that policy's batcher, and the workers get their own replies."""
    hot = HotPath(hot_path_cfg(num_workers=2, num_policies=2, seed=3))
    trajectories = _run(hot, rollouts_per_actor=8)
    _assert_exact(hot, trajectories)
    assert {policy for policy, _ in trajectories} == {0, 1}, "both policies must have been drawn"
    assert all(policy.forward_calls for policy in hot.policies)
    # an actor changes policy only between rollouts, and does change
    by_actor: dict[int, set[int]] = {}
    for policy, tr in trajectories:
        by_actor.setdefault(int(tr["obs"][0, 0]), set()).add(policy)
    assert any(len(policies) == 2 for policies in by_actor.values())


def test_agents_of_one_env_share_a_policy_without_mixing() -> None:
    cfg = hot_path_cfg(num_policies=2, pbt_mix_policies_in_one_env=False, seed=5)
    hot = HotPath(cfg, multi_agent=True)
    trajectories = _run(hot, rollouts_per_actor=8)
    _assert_exact(hot, trajectories)
    policy_at = {(int(tr["obs"][0, 0]), int(tr["obs"][0, 1]), int(tr["obs"][0, 4])): p for p, tr in trajectories}
    for (env_id, agent, k), policy in policy_at.items():
        if agent == 1:
            assert policy_at[(env_id, 0, k)] == policy, f"env {env_id} at step {k}: agents on different policies"
    assert len(set(policy_at.values())) == 2


def test_policy_version_is_stamped_per_step() -> None:
    """Steps computed after the learner publishes new weights carry the new version; weights reload once."""
    hot = HotPath(hot_path_cfg())
    hot.start().pump(lambda: hot.num_trajectories() >= 2)
    hot.weights[0].version = 11
    at_bump = hot.num_trajectories()
    hot.pump(lambda: hot.num_trajectories() >= 16)
    trajectories = hot.trajectories()
    _assert_exact(hot, trajectories)  # includes: policy_version == version of the weights that chose the action
    versions = torch.cat([tr["policy_version"] for _, tr in trajectories]).unique().tolist()
    assert versions == [10, 11]
    assert hot.weights[0].loads == [10, 11], "weights are reloaded when the version changes, not per step"
    assert all((tr["policy_version"] == 10).all() for _, tr in trajectories[:at_bump])
    # each of the 4 actors has at most one rollout in flight: every later one is entirely new
    assert all((tr["policy_version"] == 11).all() for _, tr in trajectories[at_bump + 4 :])


# ---------------------------------------------------------------- the inference worker alone
def _inference_worker(version: int = 4):
    cfg = hot_path_cfg()
    info = extract_env_info(TraceEnv(0), cfg)
    traj = allocate_trajectories(cfg, info, num_slots=6, share=False)
    for key, value in traj.items():  # a sentinel everywhere: anything written by mistake shows
        if key == "obs":
            value["obs"].fill_(-1.0)
        elif value.dtype != torch.bool:
            value.fill_(-1)
    router = Router({"inference_p0_w0": "main", "rollout_w0": "main", "rollout_w1": "main"}, {"main": LocalInbox()})
    loop = EventLoop("main", router.inboxes["main"], router)
    loop.running = True
    weights = FakeWeights(version)
    worker = InferenceWorker(cfg, PolicyWiring(0, info, traj, None, weights), 0, router)
    worker.model = EchoPolicy(0)
    loop.add_component(worker)
    replies = {name: Recorder(name, router) for name in ("rollout_w0", "rollout_w1")}
    for recorder in replies.values():
        loop.add_component(recorder)
    return worker, traj, loop, weights, replies


def _put_obs(traj, slot: int, t: int, env_id: int, k: int, rnn: tuple[float, float]) -> None:
    traj["obs"]["obs"][slot, t] = torch.tensor([env_id, 0, 0, 2, k], dtype=torch.float32)
    traj["rnn_states"][slot, t] = torch.tensor(rnn)


def test_inference_gathers_forwards_and_writes_back_by_index() -> None:
    """Requests at different steps from two workers: one forward pass over all of them, outputs written at exactly
    (slot, t), the new RNN state at (slot, t + 1), nothing else touched, one reply per worker naming its splits."""
    worker, traj, loop, weights, replies = _inference_worker()
    _put_obs(traj, 4, 1, env_id=7, k=5, rnn=(2.0, 4.0))
    _put_obs(traj, 1, 1, env_id=8, k=6, rnn=(2.0, 5.0))
    _put_obs(traj, 2, 3, env_id=9, k=9, rnn=(2.0, 8.0))
    before = {key: value.clone() for key, value in traj.items() if key != "obs"}
    worker.on_policy_request(0, 1, 1, [4, 1])
    worker.on_policy_request(1, 0, 3, [2])
    worker.after_messages()
    loop.run_once()
    assert worker.model.forward_calls == [3], "one batched forward pass"
    for slot, t, env_id, k in ((4, 1, 7, 5), (1, 1, 8, 6), (2, 3, 9, 9)):
        assert int(traj["actions"][slot, t]) == (env_id + k) % 3
        assert float(traj["values"][slot, t]) == 1000.0 * env_id + k
        assert int(traj["policy_version"][slot, t]) == 4
        assert traj["rnn_states"][slot, t + 1].tolist() == [3.0, float(k)]
    written = {(4, 1), (1, 1), (2, 3)}
    for key in ("actions", "values", "log_prob_actions", "policy_version"):
        for slot in range(6):
            for t in range(4):
                if (slot, t) not in written:
                    assert traj[key][slot, t] == before[key][slot, t], f"{key}[{slot}, {t}] overwritten"
    untouched_rnn = [(s, t) for s in range(6) for t in range(5) if (s, t - 1) not in written]
    assert all(torch.equal(traj["rnn_states"][s, t], before["rnn_states"][s, t]) for s, t in untouched_rnn)
    assert replies["rollout_w0"].messages == [("on_actions_ready", ([1], 0))]
    assert replies["rollout_w1"].messages == [("on_actions_ready", ([0], 0))]


def test_inference_reloads_weights_only_when_the_version_changes() -> None:
    worker, traj, loop, weights, _ = _inference_worker(version=4)
    _put_obs(traj, 0, 0, env_id=1, k=0, rnn=(0.0, 0.0))
    for new_version, t in ((4, 0), (4, 1), (6, 2)):
        weights.version = new_version
        worker.on_policy_request(0, 0, t, [0])
        worker.after_messages()
    assert weights.loads == [4, 6]
    assert traj["policy_version"][0, :3].tolist() == [4, 4, 6]
    assert worker.samples_processed == 3
