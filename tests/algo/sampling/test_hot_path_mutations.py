"""A deliberately wrong index in the hot path must fail the exact checks of ``test_hot_path``.

Each case recompiles one library function with one index changed (see ``hot_path_harness.mutated``), runs the hot
path and asserts the checks report the damage. If a refactoring moves the line a mutation targets, the case fails
with "mutation anchor ... not found": move the anchor with it rather than dropping the case.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hot_path_harness import HotPath, all_problems, env_action_problems, hot_path_cfg, mutated

from sample_factory.algo.sampling.env_runner import BatchedEnvRunner, NonBatchedEnvRunner
from sample_factory.algo.sampling.inference_worker import InferenceWorker
from sample_factory.algo.utils.context import reset_global_context

# (class, method, source text, replacement, batched sampling, multi-agent, a word the problems must contain)
MUTATIONS = {
    "reward_at_t_plus_1": (
        NonBatchedEnvRunner,
        "_write_step",
        'traj["rewards"][slots, t]',
        'traj["rewards"][slots, (t + 1) % self.cfg.rollout]',
        False,
        False,
        "reward",
    ),
    "batched_reward_at_t_plus_1": (
        BatchedEnvRunner,
        "step",
        'traj["rewards"][slots, t]',
        'traj["rewards"][slots, (t + 1) % traj["rewards"].shape[1]]',
        True,
        False,
        "reward",
    ),
    "done_at_t_minus_1": (
        NonBatchedEnvRunner,
        "_write_step",
        'traj["dones"][slots, t]',
        'traj["dones"][slots, max(t - 1, 0)]',
        False,
        False,
        "done",
    ),
    "valid_of_next_step": (
        NonBatchedEnvRunner,
        "_write_step",
        'traj["valids"][slots, t]',
        'traj["valids"][slots, (t + 1) % self.cfg.rollout]',
        False,
        True,
        "valid",
    ),
    "obs_in_neighbour_slot": (
        NonBatchedEnvRunner,
        "_write_obs",
        "slot = self.state.slots[actor]",
        "slot = self.state.slots[(actor + 1) % self.state.num_actors]",
        False,
        False,
        "reward",  # the neighbour's observation: rewards and dones no longer match what the slot observed
    ),
    "rnn_state_at_t_not_t_plus_1": (
        InferenceWorker,
        "_infer_in_grad_mode",
        'traj["rnn_states"][slots, steps + 1]',
        'traj["rnn_states"][slots, steps]',
        False,
        False,
        "rnn_state",
    ),
    "actions_in_rotated_slots": (
        InferenceWorker,
        "_infer_in_grad_mode",
        'traj["actions"][slots, steps]',
        'traj["actions"][slots.roll(1), steps]',
        False,
        False,
        "action",
    ),
}


@pytest.fixture(autouse=True)
def clean_context() -> Iterator[None]:
    """HotPath registers its env in the global context; leave the context empty for the next test."""
    yield
    reset_global_context()


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_shifted_index_is_detected(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    cls, method, old, new, batched, multi_agent, word = MUTATIONS[name]
    monkeypatch.setattr(cls, method, mutated(getattr(cls, method), old, new))
    hot = HotPath(hot_path_cfg(batched_sampling=batched), multi_agent=multi_agent)
    try:
        hot.start().pump(lambda: hot.num_trajectories() >= 8, max_iterations=500)
    except AssertionError as error:  # a mutation may also stall or crash the hot path: detected too
        problems = [str(error)]
    else:
        trajectories = hot.trajectories()
        problems = all_problems(trajectories) + env_action_problems(hot, trajectories)
    assert problems, f"mutation {name} went unnoticed"
    assert any(word in problem for problem in problems), problems[:5]


def test_unmutated_hot_path_has_no_problems() -> None:
    """The control of the mutation cases: the same runs without a mutation are clean."""
    for batched, multi_agent in {(m[4], m[5]) for m in MUTATIONS.values()}:
        hot = HotPath(hot_path_cfg(batched_sampling=batched), multi_agent=multi_agent)
        hot.start().pump(lambda h=hot: h.num_trajectories() >= 8)
        trajectories = hot.trajectories()
        assert not all_problems(trajectories) + env_action_problems(hot, trajectories)
