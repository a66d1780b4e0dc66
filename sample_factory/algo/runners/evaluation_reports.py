"""The runner's side of evaluation during training: when to ask the evaluator, and where its results go.

``EvaluationSchedule`` decides when: each policy is due once its env steps pass the next multiple of
``--eval_every_env_steps`` (counted from where the run resumed), and the evaluator gets one request at a time, the
most overdue policy first, tagged with the policy's env steps at that moment. Due multiples that pass while the
evaluator is busy are merged into one evaluation, so a slow evaluation never queues up work behind it. A request
lost with a dead evaluator process is made again once its replacement is ready. When the run reaches its end, the
evaluations due by then are asked for all at once (``final_requests``) and the evaluator finishes them before it
stops; the run waits up to ``FINAL_EVALUATIONS_TIMEOUT`` for them once everything else has stopped.

``EvaluationResults`` writes each result: the ``eval/*`` scalars of the policy's TensorBoard folder
(``.summary/{policy_id}``), one row of ``eval.csv`` in the experiment folder, and one log line.
"""

from __future__ import annotations

import csv
import math
import os

from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config, PolicyID
from sample_factory.utils.utils import experiment_dir

EVAL_CSV_FILE = "eval.csv"
TAG_PREFIX = "eval/"
# bookkeeping of a result, in eval.csv but not TensorBoard scalars
BOOKKEEPING = ("episodes", "policy_version", "seconds", "cpu_seconds", "env_steps_played")
CSV_FIRST_COLUMNS = ["policy_id", "env_steps", "eval_env", "deterministic", *BOOKKEEPING]
# how long a stopping run waits for the evaluator to finish the evaluations due by its end (a niced evaluator on a
# busy machine may need far longer than the other components take to stop)
FINAL_EVALUATIONS_TIMEOUT = 300.0


class EvaluationSchedule:
    """Which policy the evaluator evaluates next, and when; at most one request in flight."""

    def __init__(self, every_env_steps: int, num_policies: int) -> None:
        self.every = every_env_steps
        self.next_at: dict[PolicyID, int | None] = dict.fromkeys(range(num_policies))  # None: no count seen yet
        self.evaluator_up = False
        self.in_flight: PolicyID | None = None
        self.finishing = False  # the evaluator was asked to finish the final evaluations before it stops

    def next_request(self, env_steps: dict[PolicyID, int]) -> tuple[PolicyID, int] | None:
        """``(policy, env_steps)`` to ask for now, or None (evaluator busy or down, nothing due)."""
        for policy_id, steps in env_steps.items():
            if self.next_at[policy_id] is None:
                self.next_at[policy_id] = self._multiple_after(steps)
        if not self.evaluator_up or self.in_flight is not None:
            return None
        due = [p for p, steps in env_steps.items() if steps >= self.next_at[p]]
        if not due:
            return None
        policy_id = min(due, key=lambda p: self.next_at[p] - env_steps[p])  # the most overdue
        self.in_flight = policy_id
        self.next_at[policy_id] = self._multiple_after(env_steps[policy_id])
        return policy_id, env_steps[policy_id]

    def final_requests(self, env_steps: dict[PolicyID, int]) -> list[tuple[PolicyID, int]] | None:
        """At the end of the run: every policy whose next multiple was passed, the one being evaluated included
        (its due multiple passed while the round under way was played). None when the evaluator is down."""
        if not self.evaluator_up:
            return None
        due = [(p, steps) for p, steps in env_steps.items() if self.next_at[p] is not None and steps >= self.next_at[p]]
        for policy_id, steps in due:
            self.next_at[policy_id] = self._multiple_after(steps)
        self.finishing = True
        return due

    def stop_timeout(self, default: float, still_running: set[str], evaluator: str) -> float:
        """How long a stopping run waits: longer when only the evaluator, finishing the final evaluations, is left."""
        return FINAL_EVALUATIONS_TIMEOUT if self.finishing and still_running == {evaluator} else default

    def _multiple_after(self, steps: int) -> int:
        return (steps // self.every + 1) * self.every

    def finished(self) -> None:
        self.in_flight = None

    def evaluator_ready(self) -> None:
        """The evaluator (first start, or a restarted process) takes requests; a lost one is asked for again."""
        if self.in_flight is not None:
            self.next_at[self.in_flight] = 0
        self.evaluator_up = True
        self.in_flight = None

    def evaluator_gone(self) -> None:
        self.evaluator_up = False


class EvaluationResults:
    """Writes the results of the evaluations: TensorBoard scalars (returned for the writer), eval.csv, a log line."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.csv_path = os.path.join(experiment_dir(cfg), EVAL_CSV_FILE)
        self.rows = _read_rows(self.csv_path)  # a resumed run appends to its earlier evaluations
        self.latest: dict[PolicyID, dict[str, float]] = {}

    def record(self, policy_id: PolicyID, env_steps: int, results: dict[str, float]) -> dict[str, float]:
        """Keep ``results``, write its csv row and log line; returns its TensorBoard scalars (``eval/<name>``)."""
        scalars = {TAG_PREFIX + name: value for name, value in results.items() if name not in BOOKKEEPING}
        self.latest[policy_id] = scalars
        self._append_row(policy_id, env_steps, results)
        log.info(self.describe(policy_id, env_steps, results))
        return scalars

    def describe(self, policy_id: PolicyID, env_steps: int, results: dict[str, float]) -> str:
        """The log line of one evaluation."""
        how = "most likely actions" if self.cfg.eval_deterministic else "sampled actions"
        episodes = int(results.get("episodes", 0))
        if not episodes:
            return f"Evaluation of policy {policy_id} at {env_steps} env steps: no episode finished"
        extra = "".join(
            f", {name} {value:.3f}"
            for name, value in results.items()
            if name.startswith("avg_") and name not in ("avg_reward", "avg_episode_len", "avg_true_objective")
        )
        return (
            f"Evaluation of policy {policy_id} at {env_steps} env steps (version {int(results['policy_version'])}, "
            f"{self.cfg.eval_env or self.cfg.env}, {how}): avg reward {results['avg_reward']:.3f} +- "
            f"{results['std_reward']:.3f} over {episodes} episodes, avg episode len {results['avg_episode_len']:.1f}"
            f"{extra} ({results['seconds']:.1f} s, {results.get('cpu_seconds', math.nan):.1f} s of CPU)"
        )

    def _append_row(self, policy_id: PolicyID, env_steps: int, results: dict[str, float]) -> None:
        row = {
            "policy_id": policy_id,
            "env_steps": env_steps,
            "eval_env": self.cfg.eval_env or self.cfg.env,
            "deterministic": bool(self.cfg.eval_deterministic),
            **{name: f"{value:.6g}" for name, value in results.items()},
        }
        self.rows.append(row)
        columns = _columns(self.rows)
        if os.path.isfile(self.csv_path) and _header(self.csv_path) == columns:
            with open(self.csv_path, "a", newline="") as f:
                csv.DictWriter(f, columns, restval="").writerow(row)
            return
        _write_all(self.csv_path, columns, self.rows)  # a new column (an extra stat seen the first time)


def _columns(rows: list[dict]) -> list[str]:
    names = {name for row in rows for name in row}
    return [c for c in CSV_FIRST_COLUMNS if c in names] + sorted(names - set(CSV_FIRST_COLUMNS))


def _header(path: str) -> list[str]:
    with open(path, newline="") as f:
        return next(csv.reader(f), [])


def _read_rows(path: str) -> list[dict]:
    if not os.path.isfile(path):
        return []
    with open(path, newline="") as f:
        return [dict(row) for row in csv.DictReader(f)]


def _write_all(path: str, columns: list[str], rows: list[dict]) -> None:
    """The whole file, through a temporary file and a rename: a reader never sees half of it."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def summary_step(cfg: Config, env_steps: int, frameskip: int) -> int:
    """The x coordinate of a summary, as for the training summaries (``--summaries_use_frameskip``)."""
    return env_steps if cfg.summaries_use_frameskip else env_steps // max(1, frameskip)
