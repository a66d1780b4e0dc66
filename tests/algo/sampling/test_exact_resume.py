"""Exact resume, the rollout worker's side: a worker at rest gives its state, and a new worker continues from it.

The hot-path harness runs real rollout and inference workers over trace envs (whose observations say which env,
episode and step they come from). A stand-in batcher keeps every finished slot, so with one batch worth of slots
the workers come to rest, as in serial synchronous training. The state captured then, given to fresh workers with
fresh envs, must make them produce exactly the trajectories the original workers produce next.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from hot_path_harness import HotPath, all_problems, clone_slot, hot_path_cfg, trajectory_problems

from sample_factory.algo.utils.context import reset_global_context
from sample_factory.algo.utils.sampler_state import SamplerStateExchange
from sample_factory.algo.utils.wiring import batcher_name
from sample_factory.messaging.event_loop import Component


@pytest.fixture(autouse=True)
def clean_context() -> Iterator[None]:
    yield
    reset_global_context()


class HoldingBatcher(Component):
    """``batcher_p0`` keeping every finished slot until ``release()``, as sync mode does while the learner trains."""

    def __init__(self, hot: HotPath, policy_id: int) -> None:
        super().__init__(batcher_name(policy_id), hot.router)
        self.hot, self.policy_id = hot, policy_id
        self.trajectories: list[dict] = []
        self.held: list[int] = []

    def on_new_trajectories(self, slots: list[int], frames: int) -> None:
        self.trajectories += [clone_slot(self.hot.traj, slot) for slot in slots]
        self.held += slots

    def release(self) -> None:
        self.hot.free_slots.give_back(self.send, self.held)
        self.held = []


def _hot_path(exchange: SamplerStateExchange, **overrides) -> HotPath:
    # sync: 4 actors, batches of 4 trajectories, so exactly 4 slots: each worker comes to rest after every rollout
    cfg = hot_path_cfg(async_rl=False, batch_size=16, **overrides)
    return HotPath(cfg, batcher_factory=HoldingBatcher, sampler_states=exchange)


def _next_round(hot: HotPath) -> list[dict]:
    """Free the slots held (as training would), pump until the next 4 trajectories arrived and return them."""
    batcher = hot.batchers[0]
    batcher.release()
    wanted = len(batcher.trajectories) + 4
    hot.pump(lambda: len(batcher.trajectories) >= wanted)
    assert len(batcher.trajectories) == wanted
    return batcher.trajectories[-4:]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def test_a_worker_is_captured_only_at_rest() -> None:
    exchange = SamplerStateExchange()
    hot = _hot_path(exchange).start()
    assert exchange.capture() is None, "mid-rollout the trajectories live in the slots: no state to save"
    _next_round(hot)
    state = exchange.capture()
    assert state is not None and list(state["workers"]) == [0]
    splits = state["workers"][0]["splits"]
    assert len(splits) == 2 and [len(s["envs"]) for s in splits] == [2, 2]


def test_fresh_workers_continue_exactly_where_the_saved_ones_stopped() -> None:
    exchange = SamplerStateExchange()
    original = _hot_path(exchange).start()
    for _ in range(2):  # more than one rollout: episodes and RNN states are mid-way at rest
        _next_round(original)
    saved = exchange.capture()
    expected = _next_round(original)
    expected_actions = {env_id: list(env.received) for env_id, env in original.envs.items()}

    resumed_exchange = SamplerStateExchange()
    resumed_exchange.offer(saved)
    resumed = _hot_path(resumed_exchange).start()
    got = _next_round(resumed)

    key = lambda traj: (traj["obs"][0, 0].item(), traj["obs"][0, 1].item())  # noqa: E731 (env, agent)
    expected, got = sorted(expected, key=key), sorted(got, key=key)
    assert all(_same(e, g) for e, g in zip(expected, got, strict=True))
    assert not [problem for traj in got for problem in trajectory_problems(traj, 0)]
    assert got[0]["obs"][0, 4].item() == 8, "the env continues at its 9th step (k = 8), not from a reset"
    assert {env_id: env.received for env_id, env in resumed.envs.items()} == expected_actions


def test_a_state_that_does_not_fit_is_skipped_and_episodes_start_afresh() -> None:
    exchange = SamplerStateExchange()
    original = _hot_path(exchange).start()
    _next_round(original)
    saved = exchange.capture()
    reset_global_context()

    resumed_exchange = SamplerStateExchange()
    resumed_exchange.offer(saved)
    resumed = _hot_path(resumed_exchange, worker_num_splits=1)  # one split of 4 envs now, two of 2 were saved
    got = _next_round(resumed.start())
    assert [traj["obs"][0, 4].item() for traj in got] == [0.0] * 4, "every env starts from its first step"
    assert not all_problems([(0, traj) for traj in got])
