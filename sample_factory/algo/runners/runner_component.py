"""The runner's component on the main event loop: the one owner of a run's state.

It lives in the main process in both modes and owns which components are ready, their heartbeats, the stop request,
the status and the counts (``stats.RunStats``). Everything here is driven by messages from the other components (see
:mod:`sample_factory.algo.utils.wiring`) and by the loop's timers. Its collaborators get what they need and nothing
more: user code through ``hooks.UserHooks``, and in parallel mode the process watch (``run_control.Supervision``),
which acts on the run only through the ``run_control.RunControl`` methods below.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

from sample_factory.algo.runners.components import LoopSpec, component_kinds, rollout_worker_names
from sample_factory.algo.runners.evaluation_reports import EvaluationResults, EvaluationSchedule, summary_step
from sample_factory.algo.runners.hooks import ObserverError, UserHooks
from sample_factory.algo.runners.run_control import NoSupervision, Supervision
from sample_factory.algo.runners.start_up_signals import StopSignalsHeld
from sample_factory.algo.runners.startup import RunTimeline
from sample_factory.algo.runners.stats import RunStats, SummaryWriters
from sample_factory.algo.runners.wandb_utils import WandbLogger, init_wandb
from sample_factory.algo.utils.checkpoints import best_metric_value
from sample_factory.algo.utils.wiring import RUNNER, evaluator_name, learner_name
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import Component, EventLoop, Router, UndeliverableMessage
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus, memory_stats
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import experiment_dir, summaries_dir

REPORT_PERIOD = 5.0
STOP_TIMEOUT = 20.0
# --benchmark=True: a fixed amount of experience, no checkpoints and no done marker
BENCHMARK_ENV_STEPS = 1_000_000
# messages the runner sends to a rollout worker that a restarted one must get again (the latest per policy)
REPLAYED_SLOTS = ("on_pbt_reward_shaping",)


class RunnerComponent(Component):
    """The runner's part on the main event loop: readiness, stats, summaries, stop conditions, orderly shutdown."""

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        router: Router,
        hooks: UserHooks | None = None,
        timeline: RunTimeline | None = None,
    ) -> None:
        super().__init__(RUNNER, router)
        self.cfg = cfg
        self.env_info = env_info
        self.hooks = hooks if hooks is not None else UserHooks()
        self.timeline = timeline if timeline is not None else RunTimeline()
        self.supervision: Supervision = NoSupervision()
        self.status: StatusCode = ExperimentStatus.SUCCESS
        self.stats = RunStats(cfg)
        self.training_iteration_since_resume = 0
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
        self.replayed: dict[tuple, tuple] = {}  # (component, slot, first arg) -> args, see REPLAYED_SLOTS
        self.episodes_after_stop = 0  # episodes reported by stopping workers, after the final status line
        # --eval_every_env_steps: when to ask the evaluator, where its results go (None without an evaluator)
        self.eval_schedule: EvaluationSchedule | None = None
        self.eval_results: EvaluationResults | None = None

    # ---------------------------------------------------------------- life cycle
    def attach(self, loop: EventLoop, specs: list[LoopSpec]) -> None:
        """Join ``loop`` as the runner of the components that ``specs`` describe."""
        self.component_names = [name for spec in specs for name in spec.component_names]
        self.component_kinds = component_kinds(specs)
        self.rollout_workers = rollout_worker_names(specs)
        if evaluator_name() in self.component_kinds:
            self.eval_schedule = EvaluationSchedule(self.cfg.eval_every_env_steps, self.cfg.num_policies)
            self.eval_results = EvaluationResults(self.cfg)
        loop.add_component(self)
        loop.add_timer(REPORT_PERIOD, self._report)
        loop.add_timer(max(1.0, self.cfg.experiment_summaries_interval), self._write_summaries)
        loop.add_timer(0.5, self._check_stop_conditions)
        loop.add_timer(max(1.0, self.cfg.heartbeat_interval), self._check_heartbeats)
        if self.cfg.save_best_every_sec > 0:  # lifecycle: learners pick the best checkpoint from these averages
            loop.add_timer(self.cfg.save_best_every_sec, self._send_best_metrics)
        self._open_outputs()

    def _open_outputs(self) -> None:
        """The TensorBoard writers and the --with_wandb mirror of the summaries."""
        self.wandb = init_wandb(self.cfg)  # lifecycle: raises MissingDependencyError before any process starts
        self.writers = SummaryWriters(
            summaries_dir(experiment_dir(self.cfg)), self.cfg.num_policies, self.cfg.flush_summaries_interval
        )

    def install_signal_handlers(self, held: StopSignalsHeld | None = None) -> None:
        """SIGINT/SIGTERM stop the run in order from now on. The signals ``held`` during start-up
        (``start_up_signals``) are taken over once these handlers are in place, so none falls between the two."""
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; a caller that starts us from another thread keeps its own

        def handler(signum, _frame):
            if not self._interrupted:
                log.warning("Received %s: stopping, saving checkpoints", signal.Signals(signum).name)
            self._interrupted = True

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)
        for signum in held.hand_over() if held is not None else ():
            handler(signum, None)

    # ---------------------------------------------------------------- slots
    def on_component_ready(self, name: str) -> None:
        self.ready.add(name)
        self.last_heartbeat[name] = time.monotonic()
        if name == evaluator_name():
            self.eval_schedule.evaluator_ready()
            self._request_evaluation()
        if self.sampling_started_at is not None:
            self.supervision.component_ready_again(name)
            return
        if self.ready >= set(self.component_names):
            log.info("All %d components ready, collecting experience", len(self.component_names))
            self.sampling_started_at = time.monotonic()
            self.timeline.mark("workers")
            self.timeline.log_start_up()
            for name in self.rollout_workers:
                self.send(name, "on_begin_sampling")

    def send(self, component: str, slot: str, *args) -> None:
        if slot in REPLAYED_SLOTS:
            self.replayed[(component, slot, args[0] if args else None)] = args
        super().send(component, slot, *args)

    def on_envs_recreated(self, name: str, count: int, error: str) -> None:
        """A rollout worker recreated ``count`` envs after they raised ``error`` (one line, the traceback is in the
        worker's own log line)."""
        self.stats.envs_recreated += count
        log.warning("%s recreated %d env(s) after: %s (envs recreated in this run: %d)", name, count, error,
                    self.stats.envs_recreated)  # fmt: skip

    def on_envs_starting(self, name: str) -> None:
        self.envs_starting_at[name] = time.monotonic()

    def on_heartbeat(self, name: str) -> None:
        self.last_heartbeat[name] = time.monotonic()

    def on_env_steps(self, policy_id: int, env_steps: int) -> None:
        lost = self.supervision.learner_resumed(policy_id, env_steps)
        if lost:
            self.stats.forget_lost_steps(policy_id, lost)
        self.stats.record_env_steps(policy_id, env_steps)
        self._request_evaluation()

    def on_episodes_finished(self, episodes: list) -> None:
        handlers = self.hooks.episode_finished if self.hooks.stats_handlers else None
        if self.stop_requested_at is not None:
            self.episodes_after_stop += len(episodes)
        for policy_id, reward, length, objective, extra in episodes:
            self.stats.add_episode(policy_id, reward, length, objective, extra)
            if handlers is not None and not self.call_user_code(handlers, policy_id, reward, length, objective, extra):
                return

    def on_train_stats(self, policy_id: int, stats: dict | None, env_steps: int, trained: bool = False) -> None:
        """A learner's report; ``trained`` is True when it follows a training step (not a sampler-only count)."""
        self.stats.record_env_steps(policy_id, env_steps)
        if stats:
            self.stats.policy_stats[policy_id].train = stats
        self._request_evaluation()
        if trained:
            self.training_iteration_since_resume += 1
            self.call_user_code(self.hooks.notify, "on_training_step", self.training_iteration_since_resume)
        if self.stop_requested_at is None and self._target_reached():
            self._stop_at_target()

    def on_restart_ack(self, token: int, name: str, payload: dict | None) -> None:
        self.supervision.on_restart_ack(token, name, payload)

    def on_evaluation_done(self, policy_id: int, env_steps: int, results: dict[str, float]) -> None:
        """The evaluator's averages for ``policy_id``'s weights at ``env_steps``: summaries, eval.csv, a log line and
        the observers' ``on_evaluation``; then the next request. (A best checkpoint by an ``eval/`` metric is the
        evaluator's to write: it holds the very weights it evaluated.)"""
        self.eval_schedule.finished()
        if self.writers is None:  # arrived after the run ended its summaries
            return
        scalars = self.eval_results.record(policy_id, env_steps, results)
        step = summary_step(self.cfg, env_steps, self.env_info.frameskip)
        self.writers.scalars(policy_id, scalars, step)
        if self.wandb is not None:  # lifecycle
            self.wandb.log(policy_id, scalars, step)
        self.call_user_code(self.hooks.notify, "on_evaluation", policy_id, env_steps, scalars)
        self._request_evaluation()

    def on_evaluation_failed(self, policy_id: int, env_steps: int, error: str) -> None:
        log.warning("Evaluation of policy %d at %d env steps failed (%s), training goes on", policy_id, env_steps,
                    error)  # fmt: skip
        self.eval_schedule.finished()
        self._request_evaluation()

    def _request_evaluation(self) -> None:
        if self.eval_schedule is None or self.stop_requested_at is not None:
            return
        request = self.eval_schedule.next_request(self.stats.env_steps)
        if request is not None:
            self.send(evaluator_name(), "on_evaluate", *request)

    def on_process_traceback(self, loop_name: str, tb: str) -> None:
        self.supervision.record_traceback(loop_name, tb)

    def on_component_error(self, name: str, tb: str) -> None:
        self.supervision.record_traceback(name, tb)
        log.error("Component %s failed, stopping the run:\n%s", name, tb)
        self.status = ExperimentStatus.FAILURE
        self.request_stop()  # the learners keep their last consistent state (a learner that failed itself does not)

    def on_component_stopped(self, name: str, tree: str) -> None:
        self.stopped_trees[name] = tree
        if name == evaluator_name():
            self.eval_schedule.evaluator_gone()
        if set(self.stopped_trees) >= set(self.component_names):
            self._finish()

    def call_user_code(self, func: Callable, *args) -> bool:
        """Run an observer hook or stats handler; if it raises, stop the run with FAILURE (keeping a checkpoint)."""
        if self.hooks.any:
            try:
                func(*args)
            except ObserverError as exc:
                log.error("%s. Stopping the run.", exc)
                self.status = ExperimentStatus.FAILURE
                self.request_stop(save=True)
                return False
        return True

    # ---------------------------------------------------------------- what collaborators may see and do (RunControl)
    @property
    def stopping(self) -> bool:
        return self.stop_requested_at is not None

    @property
    def sampling_started(self) -> bool:
        return self.sampling_started_at is not None

    def is_ready(self, component: str) -> bool:
        return component in self.ready

    def is_stopped(self, component: str) -> bool:
        return component in self.stopped_trees

    def seconds_silent(self, components: list[str]) -> float | None:
        beats = [self.last_heartbeat[c] for c in components if c in self.last_heartbeat]
        return time.monotonic() - min(beats) if beats else None

    def env_steps_of(self, policy_id: int) -> int:
        return self.stats.env_steps[policy_id]

    def forget_components(self, names: list[str]) -> None:
        if evaluator_name() in names:
            self.eval_schedule.evaluator_gone()
        for name in names:
            self.ready.discard(name)
            self.last_heartbeat.pop(name, None)
            self.last_heartbeat_warning.pop(name, None)

    def resume_rollout_worker(self, name: str) -> None:
        for (component, slot, _), args in self.replayed.items():
            if component == name:
                self.send(component, slot, *args)
        self.send(name, "on_begin_sampling")

    def fail(self, message: str) -> None:
        log.error("%s", message)
        self.status = ExperimentStatus.FAILURE
        self.request_stop()

    def count_as_stopped(self, component: str) -> None:
        if component not in self.stopped_trees:
            self.on_component_stopped(component, "")

    # ---------------------------------------------------------------- periodic work
    def _report(self, final: bool = False) -> None:
        if self.sampling_started_at is None or (self.stop_requested_at is not None and not final):
            return
        for line in self.stats.report_lines():
            log.info(line)

    def _write_summaries(self) -> None:
        if self.writers is None:
            return
        with self.timing.add_time("summaries"):
            for p in range(self.cfg.num_policies):
                self._write_policy_summaries(p)

    def _write_policy_summaries(self, policy_id: int) -> None:
        summary = self.stats.summary_values(policy_id, self.env_info.frameskip, self.supervision.restarts_total)
        if summary is None:
            return
        step, values = summary
        values.update({f"stats/{k}": v for k, v in memory_stats("runner", "cpu").items()})
        self.writers.scalars(policy_id, values, step)
        if self.wandb is not None:  # lifecycle
            self.wandb.log(policy_id, values, step)
        # Sample Factory 2's order: (runner, policy_id, writer, env_steps)
        self.call_user_code(self.hooks.notify, "extra_summaries", policy_id, self.writers.writers[policy_id], step)

    def _check_stop_conditions(self) -> None:
        self.supervision.check()
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
        self.supervision.abandon(stuck, f"was killed: its envs were not ready after --reset_timeout_seconds={limit}")

    def target_env_steps(self) -> int:
        if self.cfg.benchmark:
            return min(self.cfg.train_for_env_steps, BENCHMARK_ENV_STEPS)
        return self.cfg.train_for_env_steps

    def _target_reached(self) -> bool:
        return all(steps >= self.target_env_steps() for steps in self.stats.env_steps.values())

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
        for p, stats in self.stats.policy_stats.items():
            value = best_metric_value(stats, self.cfg.save_best_metric)
            if value is not None and learner_name(p) in self.component_names:
                self.send(learner_name(p), "on_best_metric", value)

    def _mark_done(self) -> None:
        """The marker holds the env steps of the policy with the fewest: --train_for_env_steps is per policy, so
        that is the number a resumed run compares with its target (a sum would end multi-policy runs early)."""
        with open(os.path.join(experiment_dir(self.cfg), "done"), "w") as marker:
            marker.write(f"{min(self.stats.env_steps.values())}\n")

    # ---------------------------------------------------------------- shutdown
    def request_stop(self, save: bool = True) -> None:
        if self.stop_requested_at is not None:
            return
        self._report(final=True)
        self.timeline.mark("stop_requested")
        self.stop_requested_at = time.monotonic()
        self.finished_at = time.monotonic()
        unreachable = []
        for name in self.component_names:
            if self.supervision.unreachable(name):
                continue
            args = (save,) if self.component_kinds.get(name) == "learner" else ()
            try:
                self.send(name, "on_stop_requested", *args)
            except UndeliverableMessage as error:  # its loop is gone: nothing left to stop there
                log.error("%s; counting %s as stopped", error, name)
                self.status = ExperimentStatus.FAILURE
                unreachable.append(name)
        for name in unreachable:
            self.count_as_stopped(name)
        self.supervision.stopping()

    def _finish(self) -> None:
        if self.episodes_after_stop:  # workers report their last episodes as they stop: a short run may have no other
            reward_line = self.stats.reward_line()
            if reward_line:
                log.info(reward_line)
        self.timeline.mark("components_stopped")
        self.call_user_code(self.hooks.notify, "on_stop")
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
        collected = {p: self.stats.collected(p) for p in self.stats.env_steps}
        start = self.sampling_started_at or self.train_started
        elapsed = max(1e-9, (self.finished_at or time.monotonic()) - start)
        restarts, recreated = self.supervision.restarts_total, self.stats.envs_recreated
        if restarts or recreated:
            log.info("Worker processes restarted: %d, envs recreated: %d", restarts, recreated)
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


_KIND_LABELS = {
    "rollout": "RolloutWorker",
    "inference": "InferenceWorker",
    "batcher": "Batcher",
    "learner": "Learner",
    "evaluator": "Evaluator",
}


def _display_name(name: str, kind: str | None) -> str:
    """``RolloutWorker rollout_w0``: the component's kind (from its loop spec) before its name."""
    label = _KIND_LABELS.get(kind)
    return f"{label} {name}" if label else name
