"""The requests of the splits stepped on one reply leave in one message per inference worker.

A reply that covers both splits of a worker is the common case in a busy run (the inference worker served both in
one forward pass): one request message instead of two halves the messages, and the wake-ups, on that path.
"""

from __future__ import annotations

import pytest
import torch
from sampling_helpers import WORKER, OneWorkerLoop
from test_hot_path import _inference_worker

from sample_factory.messaging.event_loop import LocalInbox


@pytest.fixture
def setup(tmp_path):
    setup = OneWorkerLoop(tmp_path, LocalInbox())
    setup.worker.on_begin_sampling()
    setup.sent()  # the first requests, one per split (not sent while handling a reply)
    yield setup
    setup.close()


def _reply(setup: OneWorkerLoop, splits: list[int]) -> list:
    setup.router.deliver("w", (WORKER, "on_actions_ready", (splits,)))
    setup.loop.run_once()
    return [m[1:] for m in setup.sent()]


def test_a_reply_for_both_splits_sends_one_request_naming_both(setup) -> None:
    assert _reply(setup, [0, 1]) == [("on_policy_requests", (0, [(0, 1, [0]), (1, 1, [1])]))]
    assert _reply(setup, [1, 0]) == [("on_policy_requests", (0, [(1, 2, [1]), (0, 2, [0])]))]  # in reply order


def test_a_reply_for_one_split_sends_a_plain_request(setup) -> None:
    assert _reply(setup, [1]) == [("on_policy_request", (0, 1, 1, [1]))]
    assert _reply(setup, [0]) == [("on_policy_request", (0, 0, 1, [0]))]


def test_requests_outside_a_reply_leave_at_once(setup) -> None:
    """A split resumed by freed slots (not by a reply) must not wait in the outbox for a reply that never comes."""
    assert setup.worker._outbox is None
    setup.finish_rollouts([0])
    setup.sent()
    setup.worker.on_slots_freed([0])
    assert [m[1:] for m in setup.sent()] == [("on_policy_request", (0, 0, 0, [0]))]


def test_the_inference_worker_serves_a_combined_request_like_separate_ones() -> None:
    combined, traj_a, loop_a, _, replies_a = _inference_worker()
    separate, traj_b, loop_b, _, replies_b = _inference_worker()
    for traj in (traj_a, traj_b):
        traj["obs"]["obs"][3, 2] = torch.tensor([4.0, 0, 0, 2, 1])
        traj["obs"]["obs"][5, 2] = torch.tensor([6.0, 0, 0, 2, 3])
    combined.on_policy_requests(0, [(0, 2, [3]), (1, 2, [5])])
    separate.on_policy_request(0, 0, 2, [3])
    separate.on_policy_request(0, 1, 2, [5])
    for worker, loop in ((combined, loop_a), (separate, loop_b)):
        worker.after_messages()
        loop.run_once()
    assert combined.model.forward_calls == separate.model.forward_calls == [2]
    for key in ("actions", "values", "policy_version", "rnn_states"):
        assert torch.equal(traj_a[key], traj_b[key]), key
    assert replies_a["rollout_w0"].messages == replies_b["rollout_w0"].messages == [("on_actions_ready", ([0, 1], 0))]
