"""What a run tells the outside: the periodic log lines, the TensorBoard summaries and their ``--with_wandb``
mirror, the averages the learners pick their best checkpoint by, and the final report.

:class:`RunReporting` reads the run's counts (``stats.RunStats``) and state (``run_state.RunState``) and never
changes the run. The one thing it calls out to is user code, the observers' ``extra_summaries`` (through the
callable the runner's component gives it, which stops the run when the hook raises).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sample_factory.algo.runners.run_state import RunState
from sample_factory.algo.runners.stats import RunStats, SummaryWriters
from sample_factory.algo.runners.wandb_utils import WandbLogger, init_wandb
from sample_factory.algo.utils.checkpoints import best_metric_value
from sample_factory.algo.utils.wiring import learner_name
from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import memory_stats
from sample_factory.utils.typing import Config, PolicyID
from sample_factory.utils.utils import experiment_dir, summaries_dir

# (policy_id, writer, env_steps): the observers' extra_summaries after the policy's own summaries
ExtraSummaries = Callable[[PolicyID, object, int], object]

_KIND_LABELS = {
    "rollout": "RolloutWorker",
    "inference": "InferenceWorker",
    "batcher": "Batcher",
    "learner": "Learner",
    "evaluator": "Evaluator",
}


class RunReporting:
    """The run's log lines, summaries, best-metric averages and final report (module docstring)."""

    def __init__(self, cfg: Config, env_info: EnvInfo, stats: RunStats) -> None:
        self.cfg = cfg
        self.env_info = env_info
        self.stats = stats
        self.writers: SummaryWriters | None = None  # open between ``open`` and ``close``
        self.wandb: WandbLogger | None = None  # lifecycle: --with_wandb mirror of the summaries
        self.episodes_after_stop = 0  # episodes reported by stopping workers, after the final status line

    def open(self) -> None:
        """The TensorBoard writers and the --with_wandb mirror of the summaries."""
        self.wandb = init_wandb(self.cfg)  # lifecycle: raises MissingDependencyError before any process starts
        self.writers = SummaryWriters(
            summaries_dir(experiment_dir(self.cfg)), self.cfg.num_policies, self.cfg.flush_summaries_interval
        )

    def log_status(self) -> None:
        """The status, progress and reward lines."""
        for line in self.stats.report_lines():
            log.info(line)

    def scalars(self, policy_id: PolicyID, values: dict[str, float], step: int) -> None:
        """``values`` into the policy's TensorBoard folder and the --with_wandb mirror."""
        self.writers.scalars(policy_id, values, step)
        if self.wandb is not None:  # lifecycle
            self.wandb.log(policy_id, values, step)

    def write_summaries(self, restarts: int, extra_summaries: ExtraSummaries, final: bool = False) -> None:
        """Each policy's summaries whose step moved since the last ones (the ``final`` ones also where episodes
        ended since), each followed by ``extra_summaries``."""
        if self.writers is None:
            return
        for policy_id in range(self.cfg.num_policies):
            summary = self.stats.summary_values(policy_id, self.env_info.frameskip, restarts, final)
            if summary is None:
                continue
            step, values = summary
            values.update({f"stats/{k}": v for k, v in memory_stats("runner", "cpu").items()})
            self.scalars(policy_id, values, step)
            extra_summaries(policy_id, self.writers.writers[policy_id], step)

    def envs_recreated(self, worker: str, count: int, error: str) -> None:
        """A rollout worker recreated ``count`` envs after they raised ``error``: counted, and one line (the
        traceback is in the worker's own log line)."""
        self.stats.envs_recreated += count
        log.warning("%s recreated %d env(s) after: %s (envs recreated in this run: %d)", worker, count, error,
                    self.stats.envs_recreated)  # fmt: skip

    def best_metrics(self, component_names: list[str]) -> list[tuple[str, float]]:
        """Lifecycle: ``(learner, value)`` of each policy's average ``--save_best_metric``, for the learners of the
        run (each saves a new best itself)."""
        found = []
        for p, stats in self.stats.policy_stats.items():
            value = best_metric_value(stats, self.cfg.save_best_metric)
            if value is not None and learner_name(p) in component_names:
                found.append((learner_name(p), value))
        return found

    def log_late_rewards(self) -> None:
        """Workers report their last episodes as they stop: a short run may have no other reward line."""
        if self.episodes_after_stop:
            reward_line = self.stats.reward_line()
            if reward_line:
                log.info(reward_line)

    def close(self) -> None:
        if self.writers is not None:
            self.writers.close()
            self.writers = None
        if self.wandb is not None:  # lifecycle
            self.wandb.close()
            self.wandb = None

    def log_final_report(self, runner_tree: str, state: RunState, restarts: int) -> None:
        """The profile trees (the runner's, then those of ``state.report_order()``), restarts and the final
        ``Collected {policy: steps}, FPS: X`` line."""
        log.info("Runner profile tree view:\n%s", runner_tree)
        for name in state.report_order():
            tree = state.stopped_trees.get(name)
            if tree is not None:
                log.info("%s profile tree view:\n%s", display_name(name, state.component_kinds.get(name)), tree)
        collected = {p: self.stats.collected(p) for p in self.stats.env_steps}
        start = state.sampling_started_at or state.train_started
        elapsed = max(1e-9, (state.finished_at or time.monotonic()) - start)
        recreated = self.stats.envs_recreated
        if restarts or recreated:
            log.info("Worker processes restarted: %d, envs recreated: %d", restarts, recreated)
        log.info("Collected %s, FPS: %.1f", collected, sum(collected.values()) / elapsed)


def display_name(name: str, kind: str | None) -> str:
    """``RolloutWorker rollout_w0``: the component's kind (from its loop spec) before its name."""
    label = _KIND_LABELS.get(kind)
    return f"{label} {name}" if label else name
