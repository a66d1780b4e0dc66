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

import numpy as np

from sample_factory.utils.typing import Config, PolicyID

FPS_WINDOWS = (10, 60, 300)


class PolicyStats:
    """Moving averages over the last ``--stats_avg`` episodes of one policy."""

    def __init__(self, stats_avg: int) -> None:
        self.reward: deque = deque(maxlen=stats_avg)
        self.length: deque = deque(maxlen=stats_avg)
        self.true_objective: deque = deque(maxlen=stats_avg)
        self.extra: dict[str, deque] = {}
        self.stats_avg = stats_avg
        self.episodes = 0
        self.train: dict[str, float] = {}

    def add_episode(self, reward: float, length: int, objective: float, extra: dict | None) -> None:
        self.reward.append(reward)
        self.length.append(length)
        self.true_objective.append(objective)
        self.episodes += 1
        for key, value in (extra or {}).items():
            self.extra.setdefault(key, deque(maxlen=self.stats_avg)).append(float(value))

    def avg_reward(self) -> float:
        return float(np.mean(self.reward)) if self.reward else math.nan


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
        out[f"policy_stats/avg_{key}"] = float(np.mean(values))
    return out


def train_summaries(train: dict[str, float]) -> dict[str, float]:
    out = {}
    for key, value in train.items():
        if key.startswith(("memory_", "gpu_")):
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
