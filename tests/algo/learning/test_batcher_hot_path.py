"""The batcher on the real sampling hot path: exact batches, slots released once and reused, busy buffers kept.

The rollout and inference workers of ``tests/hot_path_harness.py`` feed the real :class:`Batcher`; a stand-in learner
keeps each batch until the test lets it go, publishing a new policy version first as the real learner does. The
free-slot queue refuses a slot released twice or handed out while not free.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from hot_path_harness import HotPath, all_problems, clone_slot, env_action_problems, hot_path_cfg

from sample_factory.algo.learning.batch_buffers import LearnerLink, TrainingBatches, batch_placement
from sample_factory.algo.learning.batcher import Batcher
from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.utils.context import reset_global_context
from sample_factory.algo.utils.wiring import batcher_name, learner_name
from sample_factory.messaging.event_loop import Component

STALL_ITERATIONS = 300  # loop iterations that would be ample to sample further if anything were free


@pytest.fixture(autouse=True)
def clean_context() -> Iterator[None]:
    """HotPath registers its env in the global context; leave the context empty for the next test."""
    yield
    reset_global_context()


class HoldingLearner(Component):
    """``learner_p0``: records every batch, then trains on it (bumps the weights' version) only when told to.

    Like the learner worker it shares only the batch buffers with the batcher, and otherwise hears from it by
    message.
    """

    def __init__(self, hot: HotPath, buffers: TrainingBatches, auto_release: bool) -> None:
        super().__init__(learner_name(0), hot.router)
        self.hot = hot
        self.buffers = buffers
        self.auto_release = auto_release
        self.batches: list[list[dict]] = []  # per batch: its trajectories, copied on arrival
        self.env_steps: list[int] = []  # as reported with each batch
        self.held: list[tuple[int, list[dict]]] = []

    def on_batch_ready(self, batch_idx: int, env_steps: int) -> None:
        buffer = self.buffers[batch_idx]
        self.env_steps.append(env_steps)
        rows = [clone_slot(buffer, row) for row in range(buffer["rewards"].shape[0])]
        self.batches.append(rows)
        self.held.append((batch_idx, rows))
        if self.auto_release:
            self.release()

    def release(self) -> None:
        for batch_idx, rows in self.held:
            buffer = self.buffers[batch_idx]
            untouched = all(torch.equal(buffer["obs"]["obs"][i], row["obs"]) for i, row in enumerate(rows))
            assert untouched, f"batch buffer {batch_idx} was refilled while the learner held it"
            self.hot.weights[0].version += 1  # the learner publishes new weights before it hands the batch back
            self.send(batcher_name(0), "on_training_done", batch_idx, True)
        self.held = []


def _hot_path(async_rl: bool, auto_release: bool, **cfg_overrides) -> tuple[HotPath, HoldingLearner]:
    cfg = hot_path_cfg(async_rl=async_rl, **cfg_overrides)
    buffers: dict[int, TrainingBatches] = {}  # per policy, allocated once and handed to its batcher and learner

    def policy_buffers(hot: HotPath, p: int) -> TrainingBatches:
        return buffers.setdefault(p, TrainingBatches(hot.cfg, hot.env_info, batch_placement("cpu")))

    hot = HotPath(
        cfg,
        batcher_factory=lambda hot, p: Batcher(
            hot.cfg,
            LearnerLink(PolicyWiring(p, hot.env_info, hot.traj, hot.free_slots, None), policy_buffers(hot, p)),
            hot.router,
        ),
        learner_factory=lambda hot, p: HoldingLearner(hot, policy_buffers(hot, p), auto_release),
    )
    return hot.start(), hot.learners[0]


def _flat(batches: list[list[dict]]) -> list[tuple[int, dict]]:
    return [(0, row) for rows in batches for row in rows]


def _env_steps(hot: HotPath) -> list[int]:
    return [env.k for _, env in sorted(hot.envs.items())]


def test_async_batches_are_exact_and_slots_are_reused() -> None:
    hot, learner = _hot_path(async_rl=True, auto_release=True)
    hot.pump(lambda: len(learner.batches) >= 12)
    trajectories = _flat(learner.batches)
    problems = all_problems(trajectories) + env_action_problems(hot, trajectories)
    assert not problems, "\n".join(problems[:20])
    assert hot.free_slots.taken_total > 2 * hot.num_slots, "slots are handed out again after their release"
    assert hot.batchers[0].env_steps == 4 * sum(len(rows) for rows in learner.batches) + 4 * len(
        hot.batchers[0].pending
    )
    # every batch came with the frames received up to it: its own and those waiting behind it, never fewer
    batched = [4 * len(rows) * (i + 1) for i, rows in enumerate(learner.batches)]
    assert all(reported >= frames for reported, frames in zip(learner.env_steps, batched, strict=True))
    assert learner.env_steps == sorted(learner.env_steps)


def test_async_sampling_continues_into_free_slots_while_the_learner_holds_a_batch() -> None:
    """Async: a batch that takes the batcher's only buffer keeps its slots until it is trained on; finished slots
    wait in the batcher, so sampling goes on into the other slots until every one is full, then pauses; training
    resumes it."""
    hot, learner = _hot_path(async_rl=True, auto_release=False)
    hot.pump(lambda: len(learner.batches) == 1)
    for _ in range(STALL_ITERATIONS):
        hot.loop.run_once()
    paused_at = _env_steps(hot)
    assert len(learner.batches) == 1, "the single batch buffer is busy: no second batch"
    waiting = len(hot.batchers[0].pending)
    assert waiting >= hot.num_slots - 4 * 2, "sampling went on into the slots freed by the first batch"
    assert len(hot.free_slots.free) < 2, "paused only for want of slots (a split of 2 actors takes 2)"
    assert len(hot.batchers[0].deferred) == hot.batchers[0].per_batch, "the batch in training keeps its slots"
    for _ in range(STALL_ITERATIONS):
        hot.loop.run_once()
    assert _env_steps(hot) == paused_at, "sampling must pause while every slot is full"
    learner.auto_release = True
    learner.release()
    hot.pump(lambda: len(learner.batches) >= 3 + hot.num_slots // 2)  # more than the waiting and held slots make
    assert min(_env_steps(hot)) > max(paused_at)
    trajectories = _flat(learner.batches)
    assert not all_problems(trajectories)


def test_sync_holds_slots_until_trained_and_has_no_policy_lag() -> None:
    """Sync (slots = one batch of 4 trajectories = one per actor): sampling stops while the learner trains, and
    every batch was sampled entirely by the weights published after the previous batch was trained on."""
    hot, learner = _hot_path(async_rl=False, auto_release=False, batch_size=16)
    assert hot.num_slots == 4
    hot.pump(lambda: len(learner.batches) == 1)
    for _ in range(STALL_ITERATIONS):
        hot.loop.run_once()
    assert _env_steps(hot) == [4, 4, 4, 4], "one rollout per env, then a stop until the batch is trained on"
    assert not hot.free_slots.free
    learner.auto_release = True
    learner.release()
    hot.pump(lambda: len(learner.batches) >= 5)
    trajectories = _flat(learner.batches)
    assert not all_problems(trajectories)
    for trained_before, rows in enumerate(learner.batches):
        versions = {int(v) for row in rows for v in row["policy_version"]}
        assert versions == {10 + trained_before}, f"batch {trained_before} has policy versions {versions}"
