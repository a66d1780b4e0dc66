"""An observer as a project written against Sample Factory 2 has it.

Its ``extra_summaries`` takes ``(runner, policy_id, writer, env_steps)``: the order in which Sample Factory 2's runner
passes them (positionally), whatever its base class's parameter names say. It reads ``runner.policy_avg_stats`` the
Sample Factory 2 way (``stats[key][policy_id]`` is a deque of recent episode values; a key appears once an episode
brought it), writes its own scalars, and leaves what it saw in ``project_observer.json`` in the experiment folder.
"""

from __future__ import annotations

import json
import os
from collections import deque

import numpy as np

from sample_factory.algo.runners.runner import AlgoObserver
from sample_factory.utils.utils import experiment_dir

OBSERVER_FILE = "project_observer.json"


def describe_avg_stats(stats) -> dict:
    """The layout of ``runner.policy_avg_stats`` as plain data."""
    out = {"type": type(stats).__name__, "keys": sorted(stats) if isinstance(stats, dict) else None, "series": {}}
    for key, series in stats.items() if isinstance(stats, dict) else ():
        out["series"][key] = {
            "type": type(series).__name__,
            "items": [type(item).__name__ for item in series] if isinstance(series, (list, tuple)) else None,
            "maxlen": [item.maxlen for item in series if isinstance(item, deque)],
            "lengths": [len(item) for item in series] if isinstance(series, (list, tuple)) else None,
        }
    return out


class ProjectSummaries(AlgoObserver):
    """Average reward and average balance steps of each policy, as extra TensorBoard scalars."""

    def __init__(self) -> None:
        self.at_start: dict | None = None
        self.last_seen: dict | None = None
        self.summaries = 0
        self.written: list[float] = []

    def on_start(self, runner) -> None:
        self.at_start = describe_avg_stats(runner.policy_avg_stats)

    def extra_summaries(self, runner, policy_id, writer, env_steps) -> None:
        self.summaries += 1
        writer.add_scalar("project/summaries", self.summaries, env_steps)
        stats = runner.policy_avg_stats
        for key in ("reward", "balance_steps"):
            if key in stats:
                value = float(np.mean(stats[key][policy_id]))
                self.written.append(value)
                writer.add_scalar(f"project/avg_{key}", value, env_steps)
        self.last_seen = describe_avg_stats(stats)
        self._save(runner)

    def on_stop(self, runner) -> None:
        self._save(runner)

    def _save(self, runner) -> None:
        with open(os.path.join(experiment_dir(runner.cfg), OBSERVER_FILE), "w") as f:
            json.dump(vars(self), f)
