"""Which settings the tuner tries next, which it may never try, and which one it finally recommends.

The search is a greedy coordinate descent from the user's own configuration (the baseline): each *move* changes one
knob of the best settings found so far (more envs per worker, batched sampling on or off, the next worker count on
a ladder of core multiples, ...); the first move whose result has not been measured and that passes every
constraint is the next trial. Constraints come from three places: the machine (cores, memory), fixed sanity limits,
and the library's own :func:`~sample_factory.cfg.validation.validate_cfg`, so a candidate the training script would
refuse is skipped before it costs a trial. Nothing here runs a process: the tuner loop feeds it measurements.
"""

from __future__ import annotations

import copy
import logging
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import Any

from sample_factory.cfg.validation import ConfigError, validate_cfg
from sample_factory.utils.flags import flag_value
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config

# Oversubscribing cores beyond this never paid off in our measurements: workers only wait for each other.
MAX_WORKERS_PER_CORE = 4
# Envs stepped by one worker; beyond this the per-worker buffers grow without any gain in batching.
MAX_ENVS_PER_WORKER = 256
# An inference worker wants a core of its own: below this many cores per extra one it only competes with the learner.
CORES_PER_POLICY_WORKER = 4
# Share of the memory available at start-up that the predicted peak of a trial may use (RSS counts shared pages
# once per process, so the prediction is pessimistic, and the user's machine must stay usable).
MEMORY_FRACTION = 0.5


@dataclass(frozen=True)
class Settings:
    """The knobs the tuner may change; everything else comes from the user's flags and the family's defaults.

    None of them changes the learning maths (``batch_size`` does, which is why it is tuned only on request):
    the learner still sees batches of ``batch_size`` samples of ``rollout``-long trajectories.
    """

    num_workers: int
    num_envs_per_worker: int
    worker_num_splits: int
    batched_sampling: bool
    policy_workers_per_policy: int
    batch_size: int

    @classmethod
    def from_cfg(cls, cfg: Config) -> Settings:
        return cls(**{f.name: flag_value(cfg, f.name) for f in fields(cls)})

    def flags(self, with_batch_size: bool = False) -> list[str]:
        """Command-line flags that reproduce these settings (``batch_size`` only when it was tuned)."""
        names = [f.name for f in fields(self) if with_batch_size or f.name != "batch_size"]
        return [f"--{name}={getattr(self, name)}" for name in names]

    def short(self) -> str:
        """A compact label for the table: ``4w x 8e /2 batched pw1``."""
        sampling = "batched" if self.batched_sampling else "per-env"
        return (
            f"{self.num_workers}w x {self.num_envs_per_worker}e /{self.worker_num_splits} {sampling} "
            f"pw{self.policy_workers_per_policy} bs{self.batch_size}"
        )


@dataclass(frozen=True)
class Machine:
    """What the trials may use: the cores this process may run on and the memory available when tuning began."""

    cores: int
    available_memory: int  # bytes

    @classmethod
    def detect(cls) -> Machine:
        import os

        import psutil

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return cls(cores=max(1, cores), available_memory=int(psutil.virtual_memory().available))


@dataclass(frozen=True)
class MemoryModel:
    """Peak memory of a trial predicted from the baseline trial.

    A rollout worker's resident size (the baseline's total shared among its workers, the learner and the inference
    worker, or the median child process if larger) is taken to grow with its number of envs; an extra inference
    worker costs as much as the largest child (it holds a model copy).
    """

    base_total: int
    base: Settings
    per_worker: int
    per_policy_worker: int

    def predict(self, settings: Settings) -> int:
        env_ratio = max(1.0, settings.num_envs_per_worker / self.base.num_envs_per_worker)
        extra_workers = settings.num_workers * env_ratio - self.base.num_workers
        extra_policy_workers = settings.policy_workers_per_policy - self.base.policy_workers_per_policy
        return int(self.base_total + extra_workers * self.per_worker + extra_policy_workers * self.per_policy_worker)


@dataclass
class Space:
    """Everything the constraints need: the machine, the baseline's full config, whether batch_size may change."""

    machine: Machine
    base_cfg: Config
    tune_batch_size: bool = False
    memory: MemoryModel | None = None

    @property
    def worker_ladder(self) -> list[int]:
        """Worker counts worth trying: half the cores, the cores, and multiples, plus the baseline's own count."""
        cores = self.machine.cores
        ladder = {max(1, cores // 2), cores, 2 * cores, MAX_WORKERS_PER_CORE * cores, self.base_cfg.num_workers}
        return sorted(ladder)

    @property
    def max_policy_workers(self) -> int:
        return max(1, self.machine.cores // CORES_PER_POLICY_WORKER)


# ---- moves: each changes one knob of the current best, or returns None when it cannot -----------------------------

Move = Callable[[Settings, Space], "Settings | None"]


def more_envs(s: Settings, space: Space) -> Settings | None:
    """Bigger inference batches and fewer env switches per step: helps cheap envs most."""
    return replace(s, num_envs_per_worker=s.num_envs_per_worker * 2)


def fewer_envs(s: Settings, space: Space) -> Settings | None:
    if s.num_envs_per_worker < 2 or s.num_envs_per_worker % 2:
        return None
    envs = s.num_envs_per_worker // 2
    return replace(
        s, num_envs_per_worker=envs, worker_num_splits=s.worker_num_splits if envs % s.worker_num_splits == 0 else 1
    )


def toggle_batched(s: Settings, space: Space) -> Settings | None:
    return replace(s, batched_sampling=not s.batched_sampling)


def more_workers(s: Settings, space: Space) -> Settings | None:
    higher = [n for n in space.worker_ladder if n > s.num_workers]
    return replace(s, num_workers=higher[0]) if higher else None


def fewer_workers(s: Settings, space: Space) -> Settings | None:
    lower = [n for n in space.worker_ladder if n < s.num_workers]
    return replace(s, num_workers=lower[-1]) if lower else None


def toggle_splits(s: Settings, space: Space) -> Settings | None:
    """Two splits double-buffer (one half steps while the other waits for actions); one split has no wait overlap
    but bigger batches. Two needs an even number of envs."""
    if s.worker_num_splits == 2:
        return replace(s, worker_num_splits=1)
    if s.worker_num_splits == 1 and s.num_envs_per_worker % 2 == 0:
        return replace(s, worker_num_splits=2)
    return None


def more_policy_workers(s: Settings, space: Space) -> Settings | None:
    return replace(s, policy_workers_per_policy=s.policy_workers_per_policy + 1)


def bigger_batch(s: Settings, space: Space) -> Settings | None:
    return replace(s, batch_size=s.batch_size * 2) if space.tune_batch_size else None


def smaller_batch(s: Settings, space: Space) -> Settings | None:
    if not space.tune_batch_size or s.batch_size % 2:
        return None
    return replace(s, batch_size=s.batch_size // 2)


# Most promising first: with a budget of a few trials only the first moves run. Envs per worker and batched sampling
# are cheap to change and often help; worker counts next; the rest refine.
MOVES: tuple[Move, ...] = (
    more_envs,
    toggle_batched,
    more_workers,
    fewer_workers,
    toggle_splits,
    fewer_envs,
    more_policy_workers,
    bigger_batch,
    smaller_batch,
)


# ---- constraints ---------------------------------------------------------------------------------------------------


def rejection(settings: Settings, space: Space) -> str | None:
    """Why ``settings`` may not run (None when it may): machine limits first, then the library's validation."""
    machine = space.machine
    if settings.num_workers > MAX_WORKERS_PER_CORE * machine.cores:
        return f"more than {MAX_WORKERS_PER_CORE} workers per core ({machine.cores} cores)"
    if settings.num_envs_per_worker > MAX_ENVS_PER_WORKER:
        return f"more than {MAX_ENVS_PER_WORKER} envs per worker"
    if settings.policy_workers_per_policy > space.max_policy_workers:
        return f"more than one inference worker per {CORES_PER_POLICY_WORKER} cores"
    if not space.tune_batch_size and settings.batch_size != space.base_cfg.batch_size:
        return "changes batch_size (pass --tune_batch_size=True to allow it)"
    if space.memory is not None:
        predicted, limit = space.memory.predict(settings), int(MEMORY_FRACTION * machine.available_memory)
        if predicted > limit:
            return f"predicted peak memory {predicted / 2**30:.1f} GiB > {limit / 2**30:.1f} GiB allowed"
    return config_rejection(settings, space.base_cfg)


def config_rejection(settings: Settings, base_cfg: Config) -> str | None:
    """What the library's own validation says about the baseline's config with ``settings`` applied."""
    cfg = copy.deepcopy(base_cfg)
    for name, value in vars_of(settings).items():
        setattr(cfg, name, value)
    try:
        with _quiet_log():  # validation warns about flags (e.g. no CUDA); the baseline trial already showed that
            validate_cfg(cfg)
    except ConfigError as error:
        return str(error)
    return None


def vars_of(settings: Settings) -> dict[str, Any]:
    return {f.name: getattr(settings, f.name) for f in fields(settings)}


@contextmanager
def _quiet_log() -> Iterator[None]:
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


@dataclass
class Candidate:
    settings: Settings
    move: str


@dataclass
class Skipped:
    settings: Settings
    move: str
    reason: str


@dataclass
class Proposal:
    """The next settings to measure (None when no move is left) and the moves skipped on the way, with why."""

    candidate: Candidate | None
    skipped: list[Skipped] = field(default_factory=list)


def propose(best: Settings, space: Space, seen: set[Settings]) -> Proposal:
    """The first move from ``best`` that gives unseen settings passing every constraint.

    ``seen`` holds settings already measured or rejected; rejected ones are added to it, so each is reported once.
    """
    skipped = []
    for move in MOVES:
        settings = move(best, space)
        if settings is None or settings in seen:
            continue
        seen.add(settings)
        reason = rejection(settings, space)
        if reason is None:
            return Proposal(Candidate(settings, move.__name__), skipped)
        skipped.append(Skipped(settings, move.__name__, reason))
    return Proposal(None, skipped)


# ---- ranking -------------------------------------------------------------------------------------------------------


def mean_fps(measurements: dict[Settings, list[float]], settings: Settings) -> float:
    values = measurements.get(settings) or []
    return statistics.fmean(values) if values else 0.0


def ranked(measurements: dict[Settings, list[float]]) -> list[Settings]:
    """Settings by mean FPS, best first (settings whose trials all failed have no entry)."""
    return sorted((s for s, v in measurements.items() if v), key=lambda s: -mean_fps(measurements, s))


@dataclass
class Choice:
    settings: Settings
    reason: str


def choose(measurements: dict[Settings, list[float]], baseline: Settings, min_gain: float) -> Choice:
    """The settings to recommend: the fastest, unless it beats the baseline by less than ``min_gain``.

    Two short trials of the same settings on a busy machine differ by several percent, so a small lead is noise;
    keeping the user's settings then is the safe answer.
    """
    order = ranked(measurements)
    if not order:
        return Choice(baseline, "no trial measured an FPS: keeping your settings")
    best, base_fps = order[0], mean_fps(measurements, baseline)
    if order == [baseline]:
        return Choice(baseline, "only your settings were measured: raise --tune_seconds to fit more trials")
    if best == baseline:
        return Choice(baseline, "your settings were the fastest")
    if base_fps <= 0:
        return Choice(best, "the baseline measured no FPS")
    gain = mean_fps(measurements, best) / base_fps - 1.0
    if gain < min_gain:
        return Choice(baseline, f"the fastest was only {100 * gain:+.1f}% over your settings (< {100 * min_gain:.0f}%)")
    return Choice(best, f"{100 * gain:+.1f}% FPS over your settings")
