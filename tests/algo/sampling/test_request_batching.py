"""An inference worker holds pending requests for the rollout workers it expects back within one forward pass.

The policy (``RequestBatching``) is tested on a clock passed in by hand; the worker's use of it on a real inference
worker with two rollout workers: held requests are served in one pass when the last expected worker asks, or when
the deadline's timer wakes the loop, and ``--inference_batch_wait=False`` serves at once.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
from hot_path_harness import hot_path_cfg
from test_hot_path import _inference_worker

from sample_factory.algo.runners import child_process
from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.sampling import inference_worker
from sample_factory.algo.sampling.inference_worker import InferenceWorker
from sample_factory.algo.sampling.request_batching import HOLD_FROM, HOLD_UNTIL, OUTLIER_CAP, SLACK, RequestBatching
from sample_factory.algo.utils.cpu_sharing import LEARNER_NICENESS, learner_yields_cpu

MS = 1e-3


def _settled(turnaround: float = 5 * MS, pass_s: float = 10 * MS) -> RequestBatching:
    """Workers 0 and 1 answered at t=0 after one round that measured their turnaround and one pass."""
    batching = RequestBatching()
    for worker in (0, 1):
        batching.on_replied(worker, -turnaround)
        batching.on_request(worker, 0.0)
    batching.on_pass(pass_s, 0.0)
    for worker in (0, 1):
        batching.on_replied(worker, 0.0)
    batching.holding = True  # as after a while of a busy inference worker (see the load tests)
    return batching


def test_nothing_is_held_before_a_pass_and_a_turnaround_were_measured() -> None:
    batching = RequestBatching()
    batching.holding = True
    batching.on_request(0, 0.0)
    assert batching.wait_until(0.0) is None  # no pass measured yet
    batching.on_pass(10 * MS, 0.01)
    batching.holding = True
    batching.on_replied(0, 0.01)
    batching.on_replied(1, 0.01)
    batching.on_request(0, 0.015)
    assert batching.wait_until(0.015) is None  # worker 1's turnaround is unknown: not waited for


def test_a_request_waits_for_the_other_worker_until_it_asks() -> None:
    batching = _settled()
    batching.on_request(0, 4 * MS)
    deadline = batching.wait_until(4 * MS)
    assert deadline == pytest.approx(SLACK * 5 * MS)  # worker 1 is expected back by then
    batching.on_request(1, 6 * MS)
    assert batching.wait_until(6 * MS) is None  # everyone expected is in: serve now


def test_an_overdue_worker_is_not_waited_for() -> None:
    batching = _settled()
    batching.on_request(0, 4 * MS)
    assert batching.wait_until(SLACK * 5 * MS + 0.1 * MS) is None


def test_no_request_waits_longer_than_one_pass() -> None:
    batching = _settled(turnaround=40 * MS, pass_s=10 * MS)
    batching.on_request(0, 30 * MS)
    assert batching.wait_until(30 * MS) == pytest.approx(40 * MS)  # first request + one pass, not 60 ms
    assert batching.wait_until(41 * MS) is None


def _cycles(batching: RequestBatching, busy: float, idle: float, count: int, start: float) -> float:
    """``count`` cycles of ``idle`` seconds without requests, then ``busy`` seconds from a request to the pass's end."""
    now = start
    for _ in range(count):
        now += idle
        batching.on_request(0, now)
        now += busy
        batching.on_pass(busy, now)
        batching.on_replied(0, now)
    return now


def test_requests_are_held_only_while_the_inference_worker_is_busy() -> None:
    """Holding pays where inference is the bottleneck (requests nearly always pending); an inference worker idle
    half of the time would only add latency. The mode has hysteresis: a held batch's own wait lowers the load."""
    batching = RequestBatching()
    now = _cycles(batching, busy=1 * MS, idle=1 * MS, count=500, start=0.0)
    assert batching.load == pytest.approx(0.5, abs=0.01) and not batching.holding
    now = _cycles(batching, busy=9 * MS, idle=1 * MS, count=500, start=now)
    assert batching.load > HOLD_FROM and batching.holding
    now = _cycles(batching, busy=6 * MS, idle=4 * MS, count=500, start=now)
    assert HOLD_UNTIL < batching.load < HOLD_FROM and batching.holding, "kept between the two thresholds"
    _cycles(batching, busy=4 * MS, idle=6 * MS, count=500, start=now)
    assert batching.load < HOLD_UNTIL and not batching.holding


def test_forgotten_workers_are_not_waited_for() -> None:
    batching = _settled()
    batching.forget(1)
    batching.on_request(0, 4 * MS)
    assert batching.wait_until(4 * MS) is None


def test_one_long_turnaround_counts_as_a_few_usual_ones() -> None:
    """A worker that waited seconds for free slots (or for the learner, in sync mode) must not stretch later waits."""
    batching = _settled(turnaround=5 * MS)
    batching.on_request(1, 3.0)  # three seconds after its answer
    assert batching._turnaround[1] <= 5 * MS * (1 + 0.1 * (OUTLIER_CAP - 1)) + 1e-12


def test_the_inference_worker_holds_a_request_and_serves_both_in_one_pass() -> None:
    worker, traj, loop, weights, replies = _inference_worker()
    assert worker.batching is None, "off by default"
    worker.batching = RequestBatching()  # --inference_batch_wait=True
    # a first round: both workers ask, are served together, and ask again soon after their answer
    worker.on_policy_request(0, 0, 0, [0])
    worker.on_policy_request(1, 0, 0, [3])
    worker.after_messages()
    assert worker.model.forward_calls == [2]
    worker.on_policy_request(0, 0, 1, [0])
    worker.on_policy_request(1, 0, 1, [3])
    worker.after_messages()
    assert worker.model.forward_calls == [2, 2]
    # now worker 0 asks alone: held for worker 1, which the loop's timer or worker 1's request releases
    worker.batching._turnaround = {0: 60.0, 1: 60.0}  # a slow clock: the test is not timed
    worker.batching._pass_s = 60.0
    worker.batching.holding = True
    worker.on_policy_request(0, 0, 2, [0])
    worker.after_messages()
    assert worker.model.forward_calls == [2, 2], "held for worker 1"
    assert worker._wake_at > time.monotonic()
    worker.on_policy_request(1, 0, 2, [3])
    worker.after_messages()
    assert worker.model.forward_calls == [2, 2, 2], "served together"


def test_the_deadline_timer_serves_held_requests() -> None:
    worker, traj, loop, weights, replies = _inference_worker()
    worker.batching = RequestBatching()
    worker.batching._pass_s = 0.02
    worker.batching._turnaround = {0: 0.02, 1: 0.02}
    worker.batching.holding = True
    now = time.monotonic()
    worker.batching.on_replied(0, now)
    worker.batching.on_replied(1, now)
    worker.on_policy_request(0, 0, 2, [0])
    worker.after_messages()
    assert worker.model.forward_calls == []
    deadline = worker._wake_at
    while worker.model.forward_calls == []:
        loop.run_once()  # sleeps until the timer, then the after-message hook serves
        assert time.monotonic() < deadline + 5.0
    assert time.monotonic() >= deadline
    assert worker.model.forward_calls == [1]


def test_without_batch_wait_a_request_is_served_at_once() -> None:
    worker, traj, loop, weights, replies = _inference_worker()  # --inference_batch_wait=False (the default)
    worker.on_policy_request(0, 0, 0, [0])
    worker.on_policy_request(1, 0, 0, [3])
    worker.after_messages()
    worker.on_policy_request(0, 0, 1, [0])  # worker 1, just answered, would be waited for with the flag
    worker.after_messages()
    assert worker.model.forward_calls == [2, 1]


IMAGES = gym.spaces.Dict(obs=gym.spaces.Box(0, 255, (3, 72, 128), np.uint8))
VECTORS = gym.spaces.Dict(obs=gym.spaces.Box(-1.0, 1.0, (4,), np.float32))


@pytest.mark.parametrize(
    "flags, obs_space, enabled",
    [
        (dict(inference_batch_wait=True), VECTORS, True),
        (dict(inference_batch_wait=False), IMAGES, False),
        (dict(inference_batch_wait=True, async_rl=False), IMAGES, False),  # nothing trains meanwhile to use the time
        (dict(inference_batch_wait=True, serial_mode=True), IMAGES, False),  # every worker has stepped by the hook
        (dict(inference_batch_wait=None, device="cpu"), IMAGES, True),  # unset: images on a CPU run
        (dict(inference_batch_wait=None, device="cpu"), gym.spaces.Box(0, 255, (84, 84, 4), np.uint8), True),
        (dict(inference_batch_wait=None, device="cpu"), VECTORS, False),
        (dict(inference_batch_wait=None, device="gpu"), IMAGES, False),
    ],
)
def test_the_flag_turns_holding_on_only_where_it_can_pay(flags: dict, obs_space: gym.Space, enabled: bool) -> None:
    env_info = SimpleNamespace(obs_space=obs_space)
    worker = InferenceWorker(hot_path_cfg(**flags), PolicyWiring(0, env_info, {"obs": {}}, None, None), 0, None)
    assert (worker.batching is not None) is enabled
    assert learner_yields_cpu(hot_path_cfg(**flags), obs_space) is (enabled and flags.get("device", "cpu") == "cpu")


@pytest.mark.parametrize("flags, niceness", [(dict(inference_batch_wait=True), LEARNER_NICENESS), (dict(), 0)])
def test_a_cpu_learner_yields_to_sampling_where_requests_are_held(monkeypatch, flags: dict, niceness: int) -> None:
    """The learner process of a policy whose inference worker holds requests lowers its priority; others keep it."""
    increments = []
    monkeypatch.setattr(os, "nice", increments.append)  # never renice the test process itself
    cfg = hot_path_cfg(device="cpu", **flags)
    spec = SimpleNamespace(kind="learner", name="learner_p0")
    child_process.set_process_options(cfg, spec, None, VECTORS)
    assert sum(increments) == niceness
    increments.clear()
    child_process.set_process_options(cfg, SimpleNamespace(kind="inference"), None)
    assert increments == []


def test_the_inference_worker_reuses_freed_heap_memory_from_its_start(monkeypatch) -> None:
    """Every pass allocates its normalised observations and activations afresh: the worker makes glibc keep freed
    memory for the next pass instead of page-faulting it in again (``reuse_freed_memory_for_large_tensors``)."""
    calls = []
    monkeypatch.setattr(inference_worker, "reuse_freed_memory_for_large_tensors", lambda: calls.append(1) or True)
    worker, _, _, _, _ = _inference_worker()
    sent = []
    monkeypatch.setattr(worker, "send", lambda *message: sent.append(message[:2]))
    worker.on_start()
    assert calls == [1]
    assert sent == [("runner", "on_component_ready")]  # started, not failed
