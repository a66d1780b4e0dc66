"""Reading a trial's FPS and its profile from the log lines the training run prints anyway.

The tuner runs the real training script, so it measures with the script's own output: the runner's status lines
(``Fps is (...). Total num frames: N.`` every few seconds, stamped with the time), the line that says sampling
began, the profile trees printed at exit and the final ``Collected {...}, FPS: X`` summary. Steady-state FPS is the
frames counted between a status line after the warm-up and the last status line, over the time between their
stamps; the summary figure includes start-up and is only a fallback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

_STAMPED_RE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]\[\s*\d+\] (.*)$")
_FRAMES_RE = re.compile(r"^Fps is \(10 sec: ([0-9.naif]+).*?\)\. Total num frames: (\d+)\.")
_READY_RE = re.compile(r"components ready, collecting experience")
_TREE_RE = re.compile(r"^(.*) profile tree view:$")
_COLLECTED_RE = re.compile(r"^Collected \{[^}]*\}, FPS: ([0-9.naif]+)")
_ENTRY_RE = re.compile(r"([A-Za-z_][\w.]*): ([0-9.]+)")
_KINDS = {"Learner": "learner", "InferenceWorker": "inference", "RolloutWorker": "rollout", "Batcher": "batcher"}


def stamp_seconds(text: str) -> float:
    """Seconds since the epoch of a log stamp ``2024-05-01 12:00:00,123`` (local time, as the logger writes it)."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


@dataclass
class StatusPoint:
    at: float  # log stamp, seconds since the epoch
    frames: int
    fps_10s: float


@dataclass
class TrialLog:
    """What a trial's output said, accumulated line by line while it runs."""

    ready_at: float | None = None
    points: list[StatusPoint] = field(default_factory=list)
    # component kind -> top-level profile entry -> seconds (max over the components of that kind)
    profile: dict[str, dict[str, float]] = field(default_factory=dict)
    overall_fps: float | None = None
    last_at: float | None = None  # stamp of the latest line: the profile trees come after the learner's last step
    _tree_kind: str | None = None

    def feed(self, line: str) -> StatusPoint | None:
        """Take one output line; return the status point it carried, if any (the tuner paces trials on them)."""
        line = line.rstrip("\n")
        match = _STAMPED_RE.match(line)
        if match is None:
            self._feed_tree_line(line)
            return None
        self._tree_kind = None
        at, message = stamp_seconds(match.group(1)), match.group(2)
        self.last_at = at
        return self._feed_message(at, message)

    def _feed_message(self, at: float, message: str) -> StatusPoint | None:
        if _READY_RE.search(message) and self.ready_at is None:
            self.ready_at = at
        elif frames := _FRAMES_RE.match(message):
            point = StatusPoint(at, int(frames.group(2)), _number(frames.group(1)))
            self.points.append(point)
            return point
        elif tree := _TREE_RE.match(message):
            self._tree_kind = _KINDS.get(tree.group(1).split(" ")[0])
        elif collected := _COLLECTED_RE.match(message):
            self.overall_fps = _number(collected.group(1))
        return None

    def _feed_tree_line(self, line: str) -> None:
        """Only the unindented lines of a tree: nested entries are parts of them, not extra time."""
        if self._tree_kind is None or not line or line.startswith(" "):
            return
        entries = self.profile.setdefault(self._tree_kind, {})
        for key, seconds in _ENTRY_RE.findall(line):
            entries[key] = max(entries.get(key, 0.0), float(seconds))


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


@dataclass
class FpsFigure:
    fps: float
    method: str  # "steady", "10s window" or "overall" (start-up included)
    window: tuple[float, float] | None = None  # log stamps of the steady window


def steady_start(log_: TrialLog, warmup_s: float) -> StatusPoint | None:
    """The first status line at least ``warmup_s`` after sampling began (None while there is none yet)."""
    if log_.ready_at is None:
        return None
    return next((p for p in log_.points if p.at >= log_.ready_at + warmup_s), None)


def fps_figure(log_: TrialLog, warmup_s: float, min_window_s: float = 1.0) -> FpsFigure | None:
    """The best FPS figure the log allows: steady window, else the last 10-second figure, else the run's average."""
    start = steady_start(log_, warmup_s)
    if start is not None:
        end = log_.points[-1]
        if end.at - start.at >= min_window_s and end.frames > start.frames:
            fps = (end.frames - start.frames) / (end.at - start.at)
            return FpsFigure(fps, "steady", (start.at, end.at))
    window = [p.fps_10s for p in log_.points if p.fps_10s > 0]
    if window:
        return FpsFigure(window[-1], "10s window")
    if log_.overall_fps:
        return FpsFigure(log_.overall_fps, "overall")
    return None


def sampling_seconds(log_: TrialLog) -> float | None:
    if log_.ready_at is None or log_.last_at is None or log_.last_at <= log_.ready_at:
        return None
    return log_.last_at - log_.ready_at


def where_time_went(log_: TrialLog, sampling_seconds: float | None, top: int = 3) -> str:
    """The largest top-level profile entries, e.g. ``learner.train 95%, inference.one_step 70%``.

    Shares are of the sampling time (from "components ready" to the profile trees at exit) of one component, so
    they do not add up to 100%: each component runs in parallel with the others.
    """
    entries = [(seconds, f"{kind}.{key}") for kind, keys in log_.profile.items() for key, seconds in keys.items()]
    entries.sort(reverse=True)
    parts = []
    for seconds, name in entries[:top]:
        share = f"{100 * seconds / sampling_seconds:.0f}%" if sampling_seconds else f"{seconds:.1f}s"
        parts.append(f"{name} {share}")
    return ", ".join(parts) or "-"
