"""The tuning loop: the baseline trial, then candidates from the search, repeats, all within the time budget.

The baseline (the user's command as given) always runs first: its ``config.json`` is the full configuration the
constraints are checked against, its processes' sizes calibrate the memory model, its wall time is the estimate of
what a trial costs, and its FPS is what any recommendation must beat. A trial starts only when the estimate fits in
what is left of the budget, and every trial is killed by the deadline of the whole tuning, so the tuning ends within
``--tune_seconds`` plus the few seconds it takes to reap a killed trial.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sample_factory.cfg.config_io import read_saved_config
from sample_factory.tune.options import TuneOptions, trial_command
from sample_factory.tune.search import (
    Choice,
    Machine,
    MemoryModel,
    Settings,
    Skipped,
    Space,
    choose,
    propose,
    ranked,
)
from sample_factory.tune.trial import STOP_GRACE_S, TrialPlan, TrialResult, run_trial
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config

TrialRunner = Callable[[TrialPlan], TrialResult]
ConfigLoader = Callable[[str], Config]
MAX_MEASUREMENTS = 3  # repeats of one setting beyond this teach little; other settings are worth more
REPEAT_RESERVE = 2.2  # with fewer than this many trials of time left, confirm the leader instead of exploring
FIT_MARGIN = 1.15  # trials of the same command differ in start-up time by 10% and more on a busy machine


class TuneError(RuntimeError):
    """Tuning could not measure the user's own command; the message says why and what to change."""


@dataclass
class TrialRow:
    index: int
    settings: Settings | None  # None until the baseline's config is known
    label: str  # "baseline", the search move, or "repeat"
    result: TrialResult


@dataclass
class TuneReport:
    machine: Machine
    rows: list[TrialRow]
    skipped: list[Skipped]
    choice: Choice
    baseline: Settings
    measurements: dict[Settings, list[float]]
    wall_s: float


@dataclass
class Budget:
    """The tuning's deadline and the estimate of one trial's cost (the longest trial so far)."""

    start: float
    seconds: float
    trial_walls: list[float] = field(default_factory=list)

    @property
    def deadline(self) -> float:
        return self.start + self.seconds

    def estimate(self) -> float:
        return max(self.trial_walls) if self.trial_walls else self.seconds

    def fits(self, now: float) -> bool:
        """A trial that would only just fit usually runs out of time before its steady window: keep a margin."""
        return self.deadline - now >= FIT_MARGIN * self.estimate()

    def trial_deadline(self, now: float) -> float:
        """Room for a slower-than-usual start-up (more workers start slower), but never past the budget."""
        estimate = self.estimate()
        return min(self.deadline, now + max(2 * estimate, estimate + 20.0))


def load_trial_cfg(experiment_dir: str) -> Config:
    return read_saved_config(os.path.join(experiment_dir, "config.json"))


class Tuner:
    """Runs the trials of one tuning session in a temporary train_dir (removed at the end)."""

    def __init__(
        self,
        opts: TuneOptions,
        machine: Machine,
        runner: TrialRunner = run_trial,
        load_cfg: ConfigLoader = load_trial_cfg,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.opts, self.machine, self.runner, self.load_cfg, self.clock = opts, machine, runner, load_cfg, clock
        self.budget = Budget(clock(), opts.tune_seconds)
        self.rows: list[TrialRow] = []
        self.skipped: list[Skipped] = []
        self.measurements: dict[Settings, list[float]] = {}
        self.train_dir = ""

    def tune(self) -> TuneReport:
        with tempfile.TemporaryDirectory(prefix="sf_tune_") as train_dir:
            self.train_dir = train_dir
            log.info(
                "Tuning for %.0f s on %d cores; trials in %s", self.opts.tune_seconds, self.machine.cores, train_dir
            )
            baseline, space = self._run_baseline()
            self._search(baseline, space)
        choice = choose(self.measurements, baseline, self.opts.min_gain)
        wall = self.clock() - self.budget.start
        return TuneReport(self.machine, self.rows, self.skipped, choice, baseline, self.measurements, wall)

    def _run_baseline(self) -> tuple[Settings, Space]:
        row = self._run(None, "baseline", self.budget.deadline)
        experiment_dir = os.path.join(self.train_dir, _experiment(row.index))
        if row.result.fps is None or not os.path.exists(os.path.join(experiment_dir, "config.json")):
            raise TuneError(_baseline_failure(row.result, self.opts.tune_seconds))
        base_cfg = self.load_cfg(experiment_dir)
        baseline = Settings.from_cfg(base_cfg)
        row.settings = baseline
        self.measurements[baseline] = [row.result.fps.fps]
        memory = MemoryModel(
            base_total=row.result.peak_rss,
            base=baseline,
            # children include env processes (VizDoom runs one per env), so a median child can be one env alone:
            # the baseline's total shared among its workers plus the learner and the inference worker errs high
            per_worker=max(row.result.median_child_rss, row.result.peak_rss // (baseline.num_workers + 2)),
            per_policy_worker=row.result.max_child_rss,
        )
        return baseline, Space(self.machine, base_cfg, self.opts.tune_batch_size, memory)

    def _search(self, baseline: Settings, space: Space) -> None:
        seen = {baseline}
        while self.budget.fits(self.clock()):
            best = ranked(self.measurements)[0]
            settings, label = self._next(best, baseline, space, seen)
            if settings is None:
                return
            row = self._run(settings, label, self.budget.trial_deadline(self.clock()))
            if row.result.fps is not None and row.result.fps.method == "steady":  # a warm-up figure would mislead
                self.measurements.setdefault(settings, []).append(row.result.fps.fps)

    def _next(
        self, best: Settings, baseline: Settings, space: Space, seen: set[Settings]
    ) -> tuple[Settings | None, str]:
        """Explore from the best so far; near the end of the budget, or when no move is left, repeat the leaders."""
        left = self.budget.deadline - self.clock()
        if best != baseline and len(self.measurements[best]) == 1 and left < REPEAT_RESERVE * self.budget.estimate():
            return best, "repeat"
        proposal = propose(best, space, seen)
        self.skipped += proposal.skipped
        for skipped in proposal.skipped:
            log.info("Skipping %s (%s): %s", skipped.settings.short(), skipped.move, skipped.reason)
        if proposal.candidate is not None:
            return proposal.candidate.settings, proposal.candidate.move
        leaders = [s for s in ranked(self.measurements)[:2] if len(self.measurements[s]) < MAX_MEASUREMENTS]
        if not leaders:
            return None, ""
        return min(leaders, key=lambda s: len(self.measurements[s])), "repeat"

    def _run(self, settings: Settings | None, label: str, deadline: float) -> TrialRow:
        index = len(self.rows)
        command = trial_command(self.opts, settings, self.train_dir, _experiment(index))
        plan = TrialPlan(
            command=command,
            warmup_s=self.opts.warmup(),
            measure_s=self.opts.measure(),
            deadline=deadline,
            log_path=os.path.join(self.train_dir, f"{_experiment(index)}.log"),
        )
        result = self.runner(plan)
        self.budget.trial_walls.append(result.wall_s)
        row = TrialRow(index, settings, label, result)
        self.rows.append(row)
        fps = f"{result.fps.fps:.0f} FPS ({result.fps.method})" if result.fps else "no FPS"
        what = settings.short() if settings else "your settings"
        log.info("Trial %d %s [%s]: %s, %s, %.0f s", index, label, what, fps, result.outcome, result.wall_s)
        return row


def _experiment(index: int) -> str:
    return f"trial_{index:02d}"


def _baseline_failure(result: TrialResult, tune_seconds: float) -> str:
    tail = "\n  ".join(result.log_tail[-15:])
    if result.outcome.startswith(("killed", "stopped")):
        hint = (
            f"it did not reach a steady state within --tune_seconds={tune_seconds:.0f} (its start-up and warm-up "
            f"took the whole budget): raise --tune_seconds"
        )
    else:
        hint = "your training command itself fails: run it without the tuner to see the whole error, fix it, retry"
    return f"the baseline trial (your command with --benchmark=True) gave no FPS ({result.outcome}); {hint}. " \
           f"Its last output:\n  {tail}"  # fmt: skip


__all__ = ["Tuner", "TuneReport", "TuneError", "TrialRow", "Budget", "STOP_GRACE_S"]
