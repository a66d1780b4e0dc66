"""The runner's component on the main event loop: statistics, status lines, summaries, stop conditions.

It lives in the main process in both modes and calls user code (observers, stats handlers) through its owning
:class:`~sample_factory.algo.runners.runner.Runner`. Everything here is driven by messages from the other
components (see :mod:`sample_factory.algo.utils.wiring`) and by the loop's timers.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Callable

from sample_factory.algo.learning.checkpoints import best_metric_value
from sample_factory.algo.runners.components import LoopSpec, component_kinds, rollout_worker_names
from sample_factory.algo.runners.runner import ObserverError, Runner
from sample_factory.algo.runners.stats import (
    FPS_WINDOWS,
    FpsMeter,
    PolicyStats,
    SummaryWriters,
    episode_summaries,
    progress_line,
    status_line,
    train_summaries,
)
from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.event_loop import Component, EventLoop, Router, UndeliverableMessage
from sample_factory.algo.utils.misc import ExperimentStatus, memory_stats
from sample_factory.algo.utils.wiring import RUNNER, learner_name
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import experiment_dir, summaries_dir
from sample_factory.utils.wandb_utils import WandbLogger, init_wandb

REPORT_PERIOD = 5.0
STOP_TIMEOUT = 20.0
# --benchmark=True: a fixed amount of experience, no checkpoints and no done marker
BENCHMARK_ENV_STEPS = 1_000_000
# messages the runner sends to a rollout worker that a restarted one must get again (the latest per policy)
REPLAYED_SLOTS = ("on_pbt_reward_shaping",)


class RunnerComponent(Component):
    """The runner's part on the main event loop: stats, summaries, stop conditions, orderly shutdown."""

    def __init__(self, cfg: Config, env_info: EnvInfo, router: Router, owner: Runner | None = None) -> None:
        super().__init__(RUNNER, router)
        self.owner = owner if owner is not None else Runner(cfg)
        self.owner.component = self
        self.cfg = cfg
        self.env_info = env_info
        self.status: StatusCode = ExperimentStatus.SUCCESS
        self.policy_stats = {p: PolicyStats(cfg.stats_avg) for p in range(cfg.num_policies)}
        self.env_steps = {p: 0 for p in range(cfg.num_policies)}
        self.initial_env_steps: dict[int, int | None] = {p: None for p in range(cfg.num_policies)}
        self.fps_meter = FpsMeter()
        self.sample_meters = {p: FpsMeter() for p in range(cfg.num_policies)}
        self.component_names: list[str] = []
        self.component_kinds: dict[str, str] = {}  # name -> "rollout", "inference", "batcher" or "learner"
        self.rollout_workers: list[str] = []  # in worker order
        self.ready: set[str] = set()
        self.stopped_trees: dict[str, str] = {}
        self.last_heartbeat: dict[str, float] = {}
        self.last_heartbeat_warning: dict[str, float] = {}
        self.envs_starting_at: dict[str, float] = {}  # rollout worker -> when it began creating its envs
        self.sampling_started_at: float | None = None
        self.stop_requested_at: float | None = None
        self.finished_at: float | None = None
        self.train_started = time.monotonic()
        self.writers: SummaryWriters | None = None
        self.wandb: WandbLogger | None = None  # lifecycle: --with_wandb mirror of the summaries
        self.loop: EventLoop | None = None
        self._interrupted = False
        self.last_summary_step = {p: -1 for p in range(cfg.num_policies)}
        self.restarts_total = 0  # worker processes restarted (parallel mode)
        self.envs_recreated = 0  # envs closed and made again after they raised (--env_error_behavior=recreate)
        self.replayed: dict[tuple, tuple] = {}  # (component, slot, first arg) -> args, see REPLAYED_SLOTS
        self.episodes_after_stop = 0  # episodes reported by stopping workers, after the final status line

    # ---------------------------------------------------------------- life cycle
    def attach(self, loop: EventLoop, specs: list[LoopSpec]) -> None:
        """Join ``loop`` as the runner of the components that ``specs`` describe."""
        self.component_names = [name for spec in specs for name in spec.component_names]
        self.component_kinds = component_kinds(specs)
        self.rollout_workers = rollout_worker_names(specs)
        loop.add_component(self)
        loop.add_timer(REPORT_PERIOD, self._report)
        loop.add_timer(max(1.0, self.cfg.experiment_summaries_interval), self._write_summaries)
        loop.add_timer(0.5, self._check_stop_conditions)
        loop.add_timer(max(1.0, self.cfg.heartbeat_interval), self._check_heartbeats)
        if self.cfg.save_best_every_sec > 0:  # lifecycle: learners pick the best checkpoint from these averages
            loop.add_timer(self.cfg.save_best_every_sec, self._send_best_metrics)
        self.wandb = init_wandb(self.cfg)  # lifecycle: raises MissingDependencyError before any process starts
        self.writers = SummaryWriters(
            summaries_dir(experiment_dir(self.cfg)), self.cfg.num_policies, self.cfg.flush_summaries_interval
        )

    def install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; a caller that starts us from another thread keeps its own

        def handler(signum, _frame):
            if not self._interrupted:
                log.warning("Received %s: stopping, saving checkpoints", signal.Signals(signum).name)
            self._interrupted = True

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)

    # ---------------------------------------------------------------- slots
    def on_component_ready(self, name: str) -> None:
        self.ready.add(name)
        self.last_heartbeat[name] = time.monotonic()
        if self.sampling_started_at is not None:
            self.component_back(name)
            return
        if self.ready >= set(self.component_names):
            log.info("All %d components ready, collecting experience", len(self.component_names))
            self.sampling_started_at = time.monotonic()
            for name in self.rollout_workers:
                self.send(name, "on_begin_sampling")

    def component_back(self, name: str) -> None:
        """A component is ready while training runs: it replaces a dead one (parallel mode)."""

    def resume_rollout_worker(self, name: str) -> None:
        """A restarted rollout worker is ready: what it missed, then the start of sampling."""
        for (component, slot, _), args in self.replayed.items():
            if component == name:
                self.send(component, slot, *args)
        self.send(name, "on_begin_sampling")

    def send(self, component: str, slot: str, *args) -> None:
        if slot in REPLAYED_SLOTS:
            self.replayed[(component, slot, args[0] if args else None)] = args
        super().send(component, slot, *args)

    def on_envs_recreated(self, name: str, count: int, error: str) -> None:
        """A rollout worker recreated ``count`` envs after they raised ``error`` (one line, the traceback is in the
        worker's own log line)."""
        self.envs_recreated += count
        log.warning("%s recreated %d env(s) after: %s (envs recreated in this run: %d)", name, count, error,
                    self.envs_recreated)  # fmt: skip

    def on_envs_starting(self, name: str) -> None:
        self.envs_starting_at[name] = time.monotonic()

    def on_heartbeat(self, name: str) -> None:
        self.last_heartbeat[name] = time.monotonic()

    def on_env_steps(self, policy_id: int, env_steps: int) -> None:
        self._update_env_steps(policy_id, env_steps)

    def on_episodes_finished(self, episodes: list) -> None:
        handle = self.owner.handle_episode if self.owner.episodic_stats_handlers else None
        if self.stop_requested_at is not None:
            self.episodes_after_stop += len(episodes)
        for policy_id, reward, length, objective, extra in episodes:
            self.policy_stats[policy_id].add_episode(reward, length, objective, extra)
            if handle is not None and not self.call_user_code(handle, policy_id, reward, length, objective, extra):
                return

    def on_train_stats(self, policy_id: int, stats: dict | None, env_steps: int, trained: bool = False) -> None:
        """A learner's report; ``trained`` is True when it follows a training step (not a sampler-only count)."""
        self._update_env_steps(policy_id, env_steps)
        if stats:
            self.policy_stats[policy_id].train = stats
        if trained:
            self.owner.training_iteration_since_resume += 1
            self.call_user_code(
                self.owner.notify_observers, "on_training_step", self.owner.training_iteration_since_resume
            )
        if self.stop_requested_at is None and self._target_reached():
            self._stop_at_target()

    def call_user_code(self, func: Callable, *args) -> bool:
        """Run an observer hook or stats handler; if it raises, stop the run with FAILURE (keeping a checkpoint)."""
        if self.owner.observers or self.owner.episodic_stats_handlers:
            try:
                func(*args)
            except ObserverError as exc:
                log.error("%s. Stopping the run.", exc)
                self.status = ExperimentStatus.FAILURE
                self.request_stop(save=True)
                return False
        return True

    def on_component_error(self, name: str, tb: str) -> None:
        log.error("Component %s failed, stopping the run:\n%s", name, tb)
        self.status = ExperimentStatus.FAILURE
        self.request_stop()  # the learners keep their last consistent state (a learner that failed itself does not)

    def on_component_stopped(self, name: str, tree: str) -> None:
        self.stopped_trees[name] = tree
        if set(self.stopped_trees) >= set(self.component_names):
            self._finish()

    # ---------------------------------------------------------------- periodic work
    def _update_env_steps(self, policy_id: int, env_steps: int) -> None:
        if self.initial_env_steps[policy_id] is None:
            self.initial_env_steps[policy_id] = env_steps
        self.env_steps[policy_id] = env_steps
        now = time.monotonic()
        self.fps_meter.record(self.collected_total(), now)
        self.sample_meters[policy_id].record(self.collected(policy_id), now)

    def collected(self, policy_id: int) -> int:
        return self.env_steps[policy_id] - (self.initial_env_steps[policy_id] or 0)

    def collected_total(self) -> int:
        return sum(self.collected(p) for p in self.env_steps)

    def _report(self, final: bool = False) -> None:
        if self.sampling_started_at is None or (self.stop_requested_at is not None and not final):
            return
        fps = {w: _nan_to_zero(self.fps_meter.fps(w)) for w in FPS_WINDOWS}
        throughput = {p: _nan_to_zero(m.fps(FPS_WINDOWS[0])) for p, m in self.sample_meters.items()}
        lags = {}
        for p, stats in self.policy_stats.items():
            t = stats.train
            if t:
                lags[p] = (
                    t.get("version_diff_min", 0.0),
                    t.get("version_diff_avg", 0.0),
                    t.get("version_diff_max", 0.0),
                )
        total = sum(self.env_steps.values())
        log.info(status_line(fps, total, throughput, self.collected_total(), lags))
        progress = progress_line(self.cfg, min(self.env_steps.values()), fps[FPS_WINDOWS[0]])
        if progress:
            log.info(progress)
        self._report_rewards()

    def _report_rewards(self) -> None:
        rewards = [(p, f"{s.avg_reward():.3f}") for p, s in self.policy_stats.items() if s.reward]
        if rewards:
            log.info(f"Avg episode reward: {rewards}")

    def _write_summaries(self) -> None:
        if self.writers is None:
            return
        with self.timing.add_time("summaries"):
            self._write_summaries_now()

    def _write_summaries_now(self) -> None:
        fps = _nan_to_zero(self.fps_meter.fps(FPS_WINDOWS[0]))
        for p, stats in self.policy_stats.items():
            step = self.env_steps[p]
            if not self.cfg.summaries_use_frameskip:
                step //= max(1, self.env_info.frameskip)
            if step == self.last_summary_step[p]:
                continue
            self.last_summary_step[p] = step
            values = episode_summaries(stats)
            values.update(train_summaries(stats.train))
            values["perf/_fps"] = fps
            values["perf/_sample_throughput"] = _nan_to_zero(self.sample_meters[p].fps(FPS_WINDOWS[0]))
            values.update({f"stats/{k}": v for k, v in memory_stats("runner", "cpu").items()})
            values["reliability/restarts"] = self.restarts_total
            values["reliability/envs_recreated"] = self.envs_recreated
            self.writers.scalars(p, values, step)
            if self.wandb is not None:  # lifecycle
                self.wandb.log(p, values, step)
            self.call_user_code(self.owner.notify_observers, "extra_summaries", p, step, self.writers.writers[p])

    def _check_stop_conditions(self) -> None:
        self.check_processes()
        if self.stop_requested_at is not None:
            if time.monotonic() - self.stop_requested_at > STOP_TIMEOUT:
                missing = sorted(set(self.component_names) - set(self.stopped_trees))
                log.error("Components did not stop within %.0f s: %s", STOP_TIMEOUT, missing)
                self._finish()
            return
        if self._interrupted:
            self.status = ExperimentStatus.INTERRUPTED
            self.request_stop()
            return
        if self.sampling_started_at is None:
            self._check_start_up_time()
            return
        if self._target_reached():
            self._stop_at_target()
        elif time.monotonic() - self.train_started > self.cfg.train_for_seconds:
            log.info("Reached --train_for_seconds=%d", self.cfg.train_for_seconds)
            self._mark_done()
            self.request_stop()

    def _check_start_up_time(self) -> None:
        """Rollout workers whose envs are not created and reset after ``--reset_timeout_seconds`` end the run."""
        now, limit = time.monotonic(), self.cfg.reset_timeout_seconds
        stuck = sorted(n for n, t in self.envs_starting_at.items() if n not in self.ready and now - t > limit)
        if not stuck:
            return
        log.error(
            "Not ready after --reset_timeout_seconds=%d: %s. Their envs did not finish being created and reset; "
            "fix the env's creation/reset, or raise --reset_timeout_seconds if it is just slow.",
            limit,
            ", ".join(stuck),
        )
        self.status = ExperimentStatus.FAILURE
        self.request_stop(save=False)  # nothing was trained yet

    def target_env_steps(self) -> int:
        if self.cfg.benchmark:
            return min(self.cfg.train_for_env_steps, BENCHMARK_ENV_STEPS)
        return self.cfg.train_for_env_steps

    def _target_reached(self) -> bool:
        return all(steps >= self.target_env_steps() for steps in self.env_steps.values())

    def _stop_at_target(self) -> None:
        log.info(
            "Reached %d env steps (--train_for_env_steps=%d)", self.target_env_steps(), self.cfg.train_for_env_steps
        )
        if not self.cfg.benchmark:
            self._mark_done()
        self.request_stop(save=not self.cfg.benchmark)

    def _check_heartbeats(self) -> None:
        now = time.monotonic()
        limit = 2 * self.cfg.heartbeat_interval
        for name, last in self.last_heartbeat.items():
            if name in self.stopped_trees or now - last < limit:
                continue
            if now - self.last_heartbeat_warning.get(name, 0.0) >= self.cfg.heartbeat_reporting_interval:
                log.warning("Component %s has not sent a heartbeat for %.0f s: it may be stuck", name, now - last)
                self.last_heartbeat_warning[name] = now

    def _send_best_metrics(self) -> None:
        """Lifecycle: each learner gets its policy's average ``--save_best_metric`` and saves a new best itself."""
        if self.stop_requested_at is not None:
            return
        for p, stats in self.policy_stats.items():
            value = best_metric_value(stats, self.cfg.save_best_metric)
            if value is not None and learner_name(p) in self.component_names:
                self.send(learner_name(p), "on_best_metric", value)

    def check_processes(self) -> None:
        """Parallel runner: detect dead processes and count their components as stopped. Serial: nothing."""

    def _mark_done(self) -> None:
        """The marker holds the env steps of the policy with the fewest: --train_for_env_steps is per policy, so
        that is the number a resumed run compares with its target (a sum would end multi-policy runs early)."""
        with open(os.path.join(experiment_dir(self.cfg), "done"), "w") as marker:
            marker.write(f"{min(self.env_steps.values())}\n")

    # ---------------------------------------------------------------- shutdown
    def request_stop(self, save: bool = True) -> None:
        if self.stop_requested_at is not None:
            return
        self._report(final=True)
        self.stop_requested_at = time.monotonic()
        self.finished_at = time.monotonic()
        unreachable = []
        for name in self.component_names:
            if self.unreachable(name):
                continue
            args = (save,) if self.component_kinds.get(name) == "learner" else ()
            try:
                self.send(name, "on_stop_requested", *args)
            except UndeliverableMessage as error:  # its loop is gone: nothing left to stop there
                log.error("%s; counting %s as stopped", error, name)
                self.status = ExperimentStatus.FAILURE
                unreachable.append(name)
        for name in unreachable:
            if name not in self.stopped_trees:
                self.on_component_stopped(name, "")

    def unreachable(self, name: str) -> bool:
        """Parallel mode: the component's process died and was not replaced (nothing to tell it)."""
        return False

    def _finish(self) -> None:
        if self.episodes_after_stop:  # workers report their last episodes as they stop: a short run may have no other
            self._report_rewards()
        self.call_user_code(self.owner.notify_observers, "on_stop")
        if self.writers is not None:
            self._write_summaries()
            self.writers.close()
            self.writers = None
        if self.wandb is not None:  # lifecycle
            self.wandb.close()
            self.wandb = None
        self.loop.component_stopped(self.name)
        self.loop.stop()

    def print_final_report(self) -> None:
        log.info("Runner profile tree view:\n%s", self.timing.tree_str())
        for name in self._report_order():
            tree = self.stopped_trees.get(name)
            if tree is not None:
                log.info("%s profile tree view:\n%s", _display_name(name, self.component_kinds.get(name)), tree)
        collected = {p: self.collected(p) for p in self.env_steps}
        start = self.sampling_started_at or self.train_started
        elapsed = max(1e-9, (self.finished_at or time.monotonic()) - start)
        if self.restarts_total or self.envs_recreated:
            log.info("Worker processes restarted: %d, envs recreated: %d", self.restarts_total, self.envs_recreated)
        log.info("Collected %s, FPS: %.1f", collected, sum(collected.values()) / elapsed)

    def _report_order(self) -> list[str]:
        """The first and last rollout workers (the others look alike), then every other worker."""
        workers = self.rollout_workers
        chosen = workers[:1] + workers[-1:] if len(workers) > 1 else workers
        rest = [n for n in self.component_names if self.component_kinds.get(n, "rollout") != "rollout"]
        return chosen + rest

    def run_loop(self) -> StatusCode:
        self.loop.run()
        self.print_final_report()
        return self.status


def _nan_to_zero(x: float) -> float:
    return 0.0 if x is None or math.isnan(x) else x


_KIND_LABELS = {"rollout": "RolloutWorker", "inference": "InferenceWorker", "batcher": "Batcher", "learner": "Learner"}


def _display_name(name: str, kind: str | None) -> str:
    """``RolloutWorker rollout_w0``: the component's kind (from its loop spec) before its name."""
    label = _KIND_LABELS.get(kind)
    return f"{label} {name}" if label else name
