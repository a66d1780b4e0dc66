"""Runner-side statistics: episode averages, FPS windows and TensorBoard summaries.

Tag names follow Sample Factory 2 so existing dashboards keep working:
``0_aux/avg_reward``, ``0_aux/avg_true_objective``, ``0_aux/avg_len``,
``perf/_fps``, ``perf/_sample_throughput``, ``train/<stat>``,
``policy_stats/avg_<metric>`` for ``info["episode_extra_stats"]`` and
``stats/<name>`` for memory and timing figures.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Mapping

import numpy as np

from sample_factory.utils.typing import Config, PolicyID

FPS_WINDOWS = (10, 60, 300)


# keys of every finished episode in Sample Factory 2's ``runner.policy_avg_stats`` (then its extra stats' keys)
EPISODE_KEYS = ("reward", "len", "true_objective")


class PolicyStats:
    """Moving averages over the last ``--stats_avg`` episodes of one policy."""

    def __init__(self, stats_avg: int) -> None:
        self.reward: deque = deque(maxlen=stats_avg)
        self.length: deque = deque(maxlen=stats_avg)
        self.true_objective: deque = deque(maxlen=stats_avg)
        self.extra: dict[str, deque] = {}  # a key another policy reported may hold an empty deque here
        self.stats_avg = stats_avg
        self.episodes = 0
        self.train: dict[str, float] = {}

    def add_episode(self, reward: float, length: int, objective: float, extra: dict | None) -> list[str]:
        """Record one episode; returns the keys of its extra stats (nested dicts give their innermost keys)."""
        self.reward.append(reward)
        self.length.append(length)
        self.true_objective.append(objective)
        self.episodes += 1
        keys = []
        for key, value in flat_extra_stats(extra):
            values = self.extra.get(key)
            if values is None:
                values = self.extra[key] = deque(maxlen=self.stats_avg)
            if isinstance(value, list):
                values.extend(value)
            else:
                values.append(value)
            keys.append(key)
        return keys

    def series(self, key: str) -> deque:
        """The deque of ``key`` (``reward``, ``len``, ``true_objective`` or an extra stat's, made when missing)."""
        if key == "reward":
            return self.reward
        if key == "len":
            return self.length
        if key == "true_objective":
            return self.true_objective
        values = self.extra.get(key)
        if values is None:
            values = self.extra[key] = deque(maxlen=self.stats_avg)
        return values

    def avg_reward(self) -> float:
        return float(np.mean(self.reward)) if self.reward else math.nan


def flat_extra_stats(extra: Mapping | None) -> list[tuple[str, float | list[float]]]:
    """``info["episode_extra_stats"]`` as ``(key, value)`` pairs: nested dicts give their innermost keys (as Sample
    Factory 2 reads them), arrays of several numbers a list of floats; values that are not numbers are left out."""
    out: list = []
    for key, value in (extra or {}).items():
        if isinstance(value, Mapping):
            out.extend(flat_extra_stats(value))
            continue
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        out.append((str(key), float(array.reshape(-1)[0]) if array.size == 1 else [float(v) for v in array.flat]))
    return out


class FpsMeter:
    """Env frames per second over sliding windows of 10, 60 and 300 seconds."""

    def __init__(self) -> None:
        self.history: deque = deque(maxlen=400)

    def record(self, total_frames: int, now: float | None = None) -> None:
        self.history.append((time.monotonic() if now is None else now, total_frames))

    def fps(self, window: float) -> float:
        if len(self.history) < 2:
            return math.nan
        now, frames = self.history[-1]
        for t, f in self.history:
            if now - t <= window:
                return (frames - f) / (now - t) if now > t else math.nan
        return math.nan


class SummaryWriters:
    """One tensorboardX writer per policy in ``.summary/{policy_id}``, created lazily."""

    def __init__(self, summary_root: str, num_policies: int, flush_secs: int) -> None:
        from tensorboardX import SummaryWriter

        self.writers = {
            p: SummaryWriter(f"{summary_root}/{p}", flush_secs=flush_secs, write_to_disk=True)
            for p in range(num_policies)
        }

    def scalars(self, policy_id: PolicyID, values: dict[str, float], step: int) -> None:
        writer = self.writers[policy_id]
        for tag, value in values.items():
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                writer.add_scalar(tag, value, step)

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()


def episode_summaries(stats: PolicyStats) -> dict[str, float]:
    if not stats.reward:
        return {}
    out = {
        "0_aux/avg_reward": float(np.mean(stats.reward)),
        "0_aux/avg_true_objective": float(np.mean(stats.true_objective)),
        "0_aux/avg_len": float(np.mean(stats.length)),
        "0_aux/min_reward": float(np.min(stats.reward)),
        "0_aux/max_reward": float(np.max(stats.reward)),
    }
    for key, values in stats.extra.items():
        if values:
            out[f"policy_stats/avg_{key}"] = float(np.mean(values))
    return out


def train_summaries(train: dict[str, float]) -> dict[str, float]:
    """``train/<stat>``; memory and GPU figures under ``stats/``; a stat named as a whole tag (``perf/rank1_fps``)
    keeps its name."""
    out = {}
    for key, value in train.items():
        if "/" in key:
            out[key] = value
        elif key.startswith(("memory_", "gpu_")):
            out[f"stats/{key}"] = value
        else:
            out[f"train/{key}"] = value
    return out


def status_line(
    fps: dict[int, float], total_frames: int, throughput: dict[int, float], samples: int, lags: dict
) -> str:
    """The periodic line scripts read (format of Sample Factory 2)."""
    fps_part = ", ".join(f"{w} sec: {fps[w]:.1f}" for w in FPS_WINDOWS)
    thr = ", ".join(f"{p}: {v:.1f}" for p, v in throughput.items())
    line = f"Fps is ({fps_part}). Total num frames: {total_frames}. Throughput: {thr}. Samples: {samples}."
    for p, (lo, avg, hi) in lags.items():
        line += f" Policy #{p} lag: (min: {lo:.1f}, avg: {avg:.1f}, max: {hi:.1f})"
    return line


def progress_line(cfg: Config, env_steps: int, fps: float) -> str:
    target = cfg.train_for_env_steps
    if target >= 10**10:
        return ""
    frac = min(1.0, env_steps / max(1, target))
    eta = (target - env_steps) / fps if fps and fps > 0 and not math.isnan(fps) else math.nan
    eta_str = "?" if math.isnan(eta) else time.strftime("%H:%M:%S", time.gmtime(max(0.0, eta)))
    return f"Progress: {env_steps}/{target} env steps ({100 * frac:.1f}%), ETA {eta_str}"


class RunStats:
    """The run's counts: env steps per policy (resumed runs included), FPS windows, episode and training stats.

    ``env_steps`` are what the learners report (totals, as saved in their checkpoints); ``collected`` counts only the
    steps collected since this run started, which is what FPS and the final ``Collected`` line measure.
    """

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        policies = range(cfg.num_policies)
        self.policy_stats = {p: PolicyStats(cfg.stats_avg) for p in policies}
        # Sample Factory 2's runner.policy_avg_stats: stat -> one deque per policy (those of ``policy_stats``); a
        # stat appears with the first episode that reports it
        self.avg_stats: dict[str, list[deque]] = {}
        self.env_steps = {p: 0 for p in policies}
        self.initial_env_steps: dict[int, int | None] = {p: None for p in policies}
        self.fps_meter = FpsMeter()
        self.sample_meters = {p: FpsMeter() for p in policies}
        self.last_summary_step = {p: -1 for p in policies}
        self.episodes_since_summary = {p: 0 for p in policies}
        self.envs_recreated = 0  # envs closed and made again after they raised (--env_error_behavior=recreate)

    def record_env_steps(self, policy_id: PolicyID, env_steps: int) -> None:
        if self.initial_env_steps[policy_id] is None:
            self.initial_env_steps[policy_id] = env_steps
        self.env_steps[policy_id] = env_steps
        now = time.monotonic()
        self.fps_meter.record(self.collected_total(), now)
        self.sample_meters[policy_id].record(self.collected(policy_id), now)

    def add_episode(
        self, policy_id: PolicyID, reward: float, length: int, objective: float, extra: dict | None
    ) -> None:
        """One finished episode of ``policy_id``: into its moving averages and, for a stat seen for the first time,
        into ``avg_stats``."""
        extra_keys = self.policy_stats[policy_id].add_episode(reward, length, objective, extra)
        self.episodes_since_summary[policy_id] += 1
        if extra_keys or not self.avg_stats:
            for key in (*EPISODE_KEYS, *extra_keys):
                if key not in self.avg_stats:
                    self.avg_stats[key] = [stats.series(key) for stats in self.policy_stats.values()]

    def forget_lost_steps(self, policy_id: PolicyID, lost: int) -> None:
        """A learner resumed ``lost`` steps before where it died: the count of steps collected in this run stays."""
        if self.initial_env_steps[policy_id] is not None:
            self.initial_env_steps[policy_id] -= lost

    def collected(self, policy_id: PolicyID) -> int:
        return self.env_steps[policy_id] - (self.initial_env_steps[policy_id] or 0)

    def collected_total(self) -> int:
        return sum(self.collected(p) for p in self.env_steps)

    def report_lines(self) -> list[str]:
        """The periodic status line, the progress line (when there is a target) and the reward line."""
        fps = {w: nan_to_zero(self.fps_meter.fps(w)) for w in FPS_WINDOWS}
        throughput = {p: nan_to_zero(m.fps(FPS_WINDOWS[0])) for p, m in self.sample_meters.items()}
        lags = {}
        for p, stats in self.policy_stats.items():
            if stats.train:
                t = stats.train
                lags[p] = (
                    t.get("version_diff_min", 0.0),
                    t.get("version_diff_avg", 0.0),
                    t.get("version_diff_max", 0.0),
                )
        total = sum(self.env_steps.values())
        lines = [status_line(fps, total, throughput, self.collected_total(), lags)]
        lines.append(progress_line(self.cfg, min(self.env_steps.values()), fps[FPS_WINDOWS[0]]))
        lines.append(self.reward_line())
        return [line for line in lines if line]

    def reward_line(self) -> str:
        rewards = [(p, f"{s.avg_reward():.3f}") for p, s in self.policy_stats.items() if s.reward]
        return f"Avg episode reward: {rewards}" if rewards else ""

    def summary_values(
        self, policy_id: PolicyID, frameskip: int, restarts: int, final: bool = False
    ) -> tuple[int, dict] | None:
        """``(step, {tag: value})`` of the policy's next summary, or None when its step has not moved since; the
        ``final`` one also when episodes ended since the last (their reports can arrive after the last steps)."""
        step = self.env_steps[policy_id]
        if not self.cfg.summaries_use_frameskip:
            step //= max(1, frameskip)
        if step == self.last_summary_step[policy_id] and not (final and self.episodes_since_summary[policy_id]):
            return None
        self.last_summary_step[policy_id] = step
        self.episodes_since_summary[policy_id] = 0
        stats = self.policy_stats[policy_id]
        values = episode_summaries(stats)
        values.update(train_summaries(stats.train))
        values["perf/_fps"] = nan_to_zero(self.fps_meter.fps(FPS_WINDOWS[0]))
        values["perf/_sample_throughput"] = nan_to_zero(self.sample_meters[policy_id].fps(FPS_WINDOWS[0]))
        values["reliability/restarts"] = restarts
        values["reliability/envs_recreated"] = self.envs_recreated
        return step, values


def nan_to_zero(x: float | None) -> float:
    return 0.0 if x is None or math.isnan(x) else x
