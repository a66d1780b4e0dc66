"""DMLab-30's headline metric in TensorBoard: the mean human-normalised score over levels, each capped at 100.

Each finished episode's ``hns/<level>`` extra stat already reaches TensorBoard per level (the library averages
extra stats); the across-level mean needs the latest value of every level, which is what these two objects keep:
:func:`DmlabStatsHandler` (``runner.register_episodic_stats_handler``) records per-level scores as episodes finish,
and :class:`DmlabSummaryObserver` (``runner.register_observer``) writes ``dmlab/mean_capped_hns`` and the number of
levels it covers whenever the runner writes a policy's summaries.
"""

from __future__ import annotations

import weakref
from collections import defaultdict, deque

from sample_factory.algo.runners.runner import AlgoObserver, Runner
from sample_factory.utils.misc import EPISODIC
from sample_factory.utils.typing import PolicyID
from sf_examples.dmlab.dmlab30 import capped_mean_hns

HNS_PREFIX = "hns/"
EPISODES_PER_LEVEL = 100  # the average of a level's last 100 episodes counts, as in other episode statistics


class DmlabStatsHandler:
    """Keeps the last episodes' human-normalised scores per policy and level."""

    def __init__(self) -> None:
        self.hns: dict[PolicyID, dict[str, deque]] = defaultdict(dict)

    def __call__(self, runner: Runner, msg: dict, policy_id: PolicyID) -> None:
        extra = msg[EPISODIC].get("episode_extra_stats") or {}
        for key, value in extra.items():
            if key.startswith(HNS_PREFIX):
                level = key[len(HNS_PREFIX) :]
                self.hns[policy_id].setdefault(level, deque(maxlen=EPISODES_PER_LEVEL)).append(float(value))

    def level_means(self, policy_id: PolicyID) -> dict[str, float]:
        return {level: sum(v) / len(v) for level, v in self.hns.get(policy_id, {}).items() if v}


class DmlabSummaryObserver(AlgoObserver):
    """Writes the capped mean human-normalised score of the levels seen so far."""

    def __init__(self, handler: DmlabStatsHandler) -> None:
        self.handler = handler

    def extra_summaries(self, runner: Runner, policy_id: PolicyID, env_steps: int, writer) -> None:
        means = self.handler.level_means(policy_id)
        if means:
            writer.add_scalar("dmlab/mean_capped_hns", capped_mean_hns(means), env_steps)
            writer.add_scalar("dmlab/levels_with_episodes", len(means), env_steps)


_HANDLERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def runner_stats_handler(runner: Runner) -> DmlabStatsHandler:
    """The one statistics handler of ``runner`` (made on first use), shared by every hook that reads or fills it."""
    handler = _HANDLERS.get(runner)
    if handler is None:
        handler = _HANDLERS[runner] = DmlabStatsHandler()
    return handler


def register_dmlab_stats(runner: Runner) -> DmlabStatsHandler:
    """Hook both onto ``runner`` (before ``runner.init()``); returns the handler."""
    handler = runner_stats_handler(runner)
    runner.register_episodic_stats_handler(handler)
    runner.register_observer(DmlabSummaryObserver(handler))
    return handler
