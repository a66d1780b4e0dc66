"""Sample Factory 2's handlers of the sampler's report messages, for an observer that keeps the numbers.

A stats observer is any object with ``stats`` (a dict: the latest value of each statistic), ``avg_stats`` (a dict of
recent values per key, for averages) and ``samples_collected`` (samples per policy id, a list or a dict). The
handlers take one message each:

- ``stats_msg_handler``: ``msg["stats"]`` holds statistics; each replaces the previous value;
- ``timing_msg_handler``: ``msg["timing"]`` holds timings in seconds; each is added to the key's recent values,
  of which the last ``AVG_STATS_WINDOW`` are kept;
- ``samples_stats_handler``: ``msg["samples_collected"]`` samples were collected for ``policy_id``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from sample_factory.utils.typing import PolicyID

STATS_KEY = "stats"
TIMING_STATS = "timing"
SAMPLES_COLLECTED = "samples_collected"
# recent values kept per key of ``avg_stats``
AVG_STATS_WINDOW = 100


def timing_msg_handler(stats_observer: Any, msg: dict) -> None:
    """Add each timing of ``msg["timing"]`` to the observer's recent values of its key."""
    for key, value in msg.get(TIMING_STATS, {}).items():
        window = stats_observer.avg_stats.setdefault(key, deque(maxlen=AVG_STATS_WINDOW))
        window.append(value)


def stats_msg_handler(stats_observer: Any, msg: dict) -> None:
    """Store each statistic of ``msg["stats"]`` as the observer's latest value of it."""
    stats_observer.stats.update(msg.get(STATS_KEY, {}))


def samples_stats_handler(stats_observer: Any, msg: dict, policy_id: PolicyID) -> None:
    """Count ``msg["samples_collected"]`` samples for ``policy_id``."""
    collected = stats_observer.samples_collected
    if isinstance(collected, dict):
        collected[policy_id] = collected.get(policy_id, 0) + msg[SAMPLES_COLLECTED]
    else:
        collected[policy_id] += msg[SAMPLES_COLLECTED]
