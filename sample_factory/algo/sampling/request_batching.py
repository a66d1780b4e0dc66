"""When an inference worker serves the requests at hand, and when it waits a moment for the rest.

An inference worker that runs a forward pass as soon as any request is in tends to settle into serving one rollout
worker at a time: while it computes for worker A, worker B's request arrives; it then serves B alone while A steps,
and so on. Each pass pays the full fixed cost of the model (on a CPU, streaming every weight from memory: 11 MB for
the Doom model's fc and GRU, most of a pass on a batch of four) for a fraction of the observations it could take.

``RequestBatching`` keeps, per rollout worker, when it was last answered and how long it usually takes to step its
envs and ask again (its turnaround). With requests pending, the inference worker waits for the rollout workers it
answered and expects back soon, and serves everything in one pass when the last of them arrives. The wait is
bounded:

- only while the inference worker is the bottleneck: requests are held when, on average, requests were pending
  (or being served) at least ``HOLD_FROM`` of the time, and no longer once that drops below ``HOLD_UNTIL``. An
  inference worker that idles between requests (cheap MLP policies, a learner that stops collection) would only
  add latency by waiting;
- only workers expected back within ``SLACK`` times their usual turnaround are waited for (a worker whose rollout
  completed and who waits for free slots, or one that died, is not);
- no request waits longer than one forward pass takes (a running mean of the passes): if the others come later
  than that, serving now and serving them in their own pass would have been as fast for everyone.

The CPU time saved goes to the other processes; the inference worker only holds requests where the learner trains
during collection (``--async_rl=True``) and can use it.

Holding alone frees CPU time without making the run much faster: the inference worker is the one process that
every sample waits on, and on a contended CPU it also waits for a core behind the learner, which is ready to run
nearly all the time. So where the learner computes on the CPU, its process runs at a lower priority than the
sampling processes (``algo.utils.cpu_sharing``): whenever the inference worker or a rollout worker is ready to run,
it gets a core first, and the learner trains in the time they leave, the held requests' time included. Measured on
2 cores with the flags of ``compare_sf2``'s doom_basic_matched workload, four rounds alternated: 1,619 FPS on
average with both, 1,524 with neither, 1,551 with holding alone, 1,540 with the lower priority alone.

Both are on by default for image observations on a CPU run (``cpu_sharing.holds_requests``);
``--inference_batch_wait`` True or False decides where given. Measurements: docs/architecture.md, "Batching
inference requests".
"""

from __future__ import annotations

# a rollout worker is waited for until SLACK times its usual turnaround after it was answered
SLACK = 1.5
# weight of the newest sample in the running means of turnarounds and pass durations
EMA_WEIGHT = 0.1
# one turnaround sample counts as at most this many times the running mean (a worker that waited for free slots or
# for the learner in sync mode must not make the next waits longer)
OUTLIER_CAP = 4.0
# weight of the newest pass in the running mean of the load (slow: it decides a mode, not one pass)
LOAD_EMA_WEIGHT = 0.02
# requests are held while the load is above HOLD_FROM, until it drops below HOLD_UNTIL (hysteresis: no flapping)
HOLD_FROM = 0.75
HOLD_UNTIL = 0.5


class RequestBatching:
    """Decides whether an inference worker with pending requests should run its pass now or a little later.

    The worker tells it about requests (``on_request``), replies (``on_replied``), pass durations (``on_pass``) and
    lost rollout workers (``forget``); ``wait_until`` answers with a monotonic-clock deadline, or ``None`` to serve
    now. Times are seconds of ``time.monotonic()``, passed in so that the policy is a pure function of its inputs.
    An inference worker without ``--inference_batch_wait`` has none, and does none of this bookkeeping.
    """

    def __init__(self) -> None:
        self._answered_at: dict[int, float] = {}  # rollout worker -> when it was answered and not heard from since
        self._turnaround: dict[int, float] = {}  # rollout worker -> running mean of answer-to-next-request times
        self._pass_s = 0.0  # running mean of the duration of one forward pass (0: none measured yet)
        self._first_pending_at: float | None = None
        self._last_pass_end: float | None = None
        self.load = 0.0  # running mean of the share of time with requests pending or in a pass
        self.holding = False  # whether the load calls for holding requests (see HOLD_FROM)

    def on_request(self, worker_idx: int, now: float) -> None:
        if self._first_pending_at is None:
            self._first_pending_at = now
        answered = self._answered_at.pop(worker_idx, None)
        if answered is None:
            return
        gap = now - answered
        mean = self._turnaround.get(worker_idx)
        if mean is None:
            self._turnaround[worker_idx] = gap
        else:
            self._turnaround[worker_idx] = mean + EMA_WEIGHT * (min(gap, OUTLIER_CAP * mean) - mean)

    def on_pass(self, duration_s: float, now: float) -> None:
        """A forward pass over every pending request took ``duration_s`` and ended at ``now``; nothing is pending
        any more."""
        self._pass_s = duration_s if self._pass_s == 0.0 else self._pass_s + EMA_WEIGHT * (duration_s - self._pass_s)
        if self._last_pass_end is not None and self._first_pending_at is not None:
            busy = now - self._first_pending_at
            cycle = now - self._last_pass_end
            if cycle > 0:
                self.load += LOAD_EMA_WEIGHT * (min(busy / cycle, 1.0) - self.load)
                self.holding = self.load >= (HOLD_UNTIL if self.holding else HOLD_FROM)
        self._last_pass_end = now
        self._first_pending_at = None

    def on_replied(self, worker_idx: int, now: float) -> None:
        self._answered_at[worker_idx] = now

    def forget(self, worker_idx: int) -> None:
        """A rollout worker is gone (its replacement starts afresh)."""
        self._answered_at.pop(worker_idx, None)
        self._turnaround.pop(worker_idx, None)

    def wait_until(self, now: float) -> float | None:
        """The time until which to hold the pending requests, or ``None`` to serve them now."""
        if not (self.holding and self._answered_at and self._first_pending_at is not None):
            return None  # (holding implies a measured pass: it is decided in on_pass)
        latest = self._first_pending_at + self._pass_s
        expected = [
            answered + SLACK * self._turnaround[worker]
            for worker, answered in self._answered_at.items()
            if worker in self._turnaround
        ]
        coming = [t for t in expected if now < t]
        if not coming:
            return None
        deadline = min(max(coming), latest)
        return deadline if now < deadline else None
