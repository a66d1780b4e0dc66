"""The runner's component on the main event loop: the one owner of a run, composed of collaborators by role.

It lives in the main process in both modes. Every message slot the other components send to (see
:mod:`sample_factory.algo.utils.wiring`) and the loop's timers land here, and the component hands each to the
collaborator whose role it is:

- ``run_state.RunState``: readiness, heartbeats, the stop request, the status, the stop conditions, signals and the
  ``done`` marker; the stop conditions act on the run through the component's ``run_state.RunEnd`` methods;
- ``reporting.RunReporting``: log lines, TensorBoard/W&B summaries, best-metric averages, the final report;
- ``evaluations.RunEvaluations``: when to ask the evaluator, and what its results become;
- ``stats.RunStats``: the counts (env steps, FPS, episode and training stats);
- user code through ``hooks.UserHooks``, and in parallel mode the process watch (``run_control.Supervision``),
  which sees and acts on the run only through ``RunnerControl`` (``run_control.RunControl``, at the end of this
  file).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from sample_factory.algo.runners.components import LoopSpec
from sample_factory.algo.runners.evaluations import RunEvaluations
from sample_factory.algo.runners.hooks import ObserverError, UserHooks
from sample_factory.algo.runners.reporting import RunReporting
from sample_factory.algo.runners.run_control import NoSupervision, Supervision
from sample_factory.algo.runners.run_state import RunState
from sample_factory.algo.runners.start_up_signals import StopSignalsHeld
from sample_factory.algo.runners.startup import RunTimeline
from sample_factory.algo.runners.stats import RunStats
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import Component, EventLoop, Router, UndeliverableMessage
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode

REPORT_PERIOD = 5.0
STOP_TIMEOUT = 20.0
# messages the runner sends to a rollout worker that a restarted one must get again (the latest per policy)
REPLAYED_SLOTS = ("on_pbt_reward_shaping",)


def _state_field(name: str, owner: str = "state") -> property:
    """A field of a collaborator, read and written as the component's own (``runner.component.status``)."""
    return property(
        lambda self: getattr(getattr(self, owner), name), lambda self, v: setattr(getattr(self, owner), name, v)
    )


class RunnerComponent(Component):
    """The runner's part on the main event loop: the message slots and timers of a run (module docstring)."""

    status = _state_field("status")
    component_names = _state_field("component_names")
    component_kinds = _state_field("component_kinds")
    rollout_workers = _state_field("rollout_workers")
    stopped_trees = _state_field("stopped_trees")
    sampling_started_at = _state_field("sampling_started_at")
    train_started = _state_field("train_started")
    writers = _state_field("writers", owner="reporting")

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
        self.state = RunState(cfg)
        self.control = RunnerControl(self)  # what the process watch may see and do
        self.stats = RunStats(cfg)
        self.reporting = RunReporting(cfg, env_info, self.stats)
        self.evaluations = RunEvaluations(cfg, self.send)
        self.training_iteration_since_resume = 0
        self.loop: EventLoop | None = None
        self.replayed: dict[tuple, tuple] = {}  # (component, slot, first arg) -> args, see REPLAYED_SLOTS

    # ---------------------------------------------------------------- life cycle
    def attach(self, loop: EventLoop, specs: list[LoopSpec]) -> None:
        """Join ``loop`` as the runner of the components that ``specs`` describe."""
        self.state.set_components(specs)
        self.evaluations.attach(self.state.component_kinds)
        loop.add_component(self)
        loop.add_timer(REPORT_PERIOD, self._report)
        loop.add_timer(max(1.0, self.cfg.experiment_summaries_interval), self._write_summaries)
        loop.add_timer(0.5, self._check_stop_conditions)
        loop.add_timer(max(1.0, self.cfg.heartbeat_interval), self.state.warn_silent_components)
        if self.cfg.save_best_every_sec > 0:  # lifecycle: learners pick the best checkpoint from these averages
            loop.add_timer(self.cfg.save_best_every_sec, self._send_best_metrics)
        self._open_outputs()

    def _open_outputs(self) -> None:
        self.reporting.open()  # the TensorBoard writers and the --with_wandb mirror of the summaries

    def install_signal_handlers(self, held: StopSignalsHeld | None = None) -> None:
        """SIGINT/SIGTERM stop the run in order from now on (``RunState.install_signal_handlers``)."""
        self.state.install_signal_handlers(held)

    # ---------------------------------------------------------------- slots
    def on_component_ready(self, name: str) -> None:
        self.state.component_ready(name)
        if self.evaluations.component_ready(name):  # the evaluator takes requests (again)
            self._request_evaluation()
        if self.state.sampling_started_at is not None:
            self.supervision.component_ready_again(name)
            return
        if self.state.all_ready():
            log.info("All %d components ready, collecting experience", len(self.state.component_names))
            self.state.sampling_started_at = time.monotonic()
            self.timeline.mark("workers")
            self.timeline.log_start_up()
            for worker in self.state.rollout_workers:
                self.send(worker, "on_begin_sampling")

    def send(self, component: str, slot: str, *args) -> None:
        if slot in REPLAYED_SLOTS:
            self.replayed[(component, slot, args[0] if args else None)] = args
        super().send(component, slot, *args)

    def on_envs_recreated(self, name: str, count: int, error: str) -> None:
        self.reporting.envs_recreated(name, count, error)

    def on_envs_starting(self, name: str) -> None:
        self.state.envs_starting_at[name] = time.monotonic()

    def on_heartbeat(self, name: str) -> None:
        self.state.heartbeat(name)

    def on_env_steps(self, policy_id: int, env_steps: int) -> None:
        lost = self.supervision.learner_resumed(policy_id, env_steps)
        if lost:
            self.stats.forget_lost_steps(policy_id, lost)
        self.stats.record_env_steps(policy_id, env_steps)
        self._request_evaluation()

    def on_episodes_finished(self, episodes: list) -> None:
        handlers = self.hooks.episode_finished if self.hooks.stats_handlers else None
        if self.stopping:
            self.reporting.episodes_after_stop += len(episodes)
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
        if not self.stopping and self.state.target_reached(self.stats.env_steps):
            self.state.stop_at_target(self)

    def on_restart_ack(self, token: int, name: str, payload: dict | None) -> None:
        self.supervision.on_restart_ack(token, name, payload)

    def on_evaluation_done(self, policy_id: int, env_steps: int, results: dict[str, float]) -> None:
        """The evaluator's averages for ``policy_id``'s weights at ``env_steps``: summaries, eval.csv, a log line, the
        observers' ``on_evaluation``, the next request (a best checkpoint by an ``eval/`` metric is the evaluator's)."""
        self.evaluations.finished()
        if self.reporting.writers is None:  # arrived after the run ended its summaries
            return
        scalars, step = self.evaluations.record(policy_id, env_steps, results, self.env_info.frameskip)
        self.reporting.scalars(policy_id, scalars, step)
        self.call_user_code(self.hooks.notify, "on_evaluation", policy_id, env_steps, scalars)
        self._request_evaluation()

    def on_evaluation_failed(self, policy_id: int, env_steps: int, error: str) -> None:
        self.evaluations.failed(policy_id, env_steps, error)
        self._request_evaluation()

    def _request_evaluation(self) -> None:
        if not self.stopping:
            self.evaluations.request_due(self.stats.env_steps)

    def on_process_traceback(self, loop_name: str, tb: str) -> None:
        self.supervision.record_traceback(loop_name, tb)

    def on_component_error(self, name: str, tb: str) -> None:
        self.supervision.record_traceback(name, tb)
        log.error("Component %s failed, stopping the run:\n%s", name, tb)
        self.state.status = ExperimentStatus.FAILURE
        self.request_stop()  # the learners keep their last consistent state (a learner that failed itself does not)

    def on_component_stopped(self, name: str, tree: str) -> None:
        all_stopped = self.state.component_stopped(name, tree)
        self.evaluations.components_gone([name])
        if all_stopped:
            self.finish()

    def call_user_code(self, func: Callable, *args) -> bool:
        """Run an observer hook or stats handler; if it raises, stop the run with FAILURE (keeping a checkpoint)."""
        if self.hooks.any:
            try:
                func(*args)
            except ObserverError as exc:
                log.error("%s. Stopping the run.", exc)
                self.state.status = ExperimentStatus.FAILURE
                self.request_stop(save=True)
                return False
        return True

    @property
    def stopping(self) -> bool:
        return self.state.stopping

    def count_as_stopped(self, component: str) -> None:
        """A component that will never answer the stop request (its process is gone)."""
        if component not in self.state.stopped_trees:
            self.on_component_stopped(component, "")

    # ---------------------------------------------------------------- periodic work
    def _report(self, final: bool = False) -> None:
        if self.state.sampling_started_at is None or (self.stopping and not final):
            return
        self.reporting.log_status()

    def _write_summaries(self, final: bool = False) -> None:
        if self.reporting.writers is None:
            return
        with self.timing.add_time("summaries"):
            # Sample Factory 2's order: (runner, policy_id, writer, env_steps)
            extra_summaries = partial(self.call_user_code, self.hooks.notify, "extra_summaries")
            self.reporting.write_summaries(self.supervision.restarts_total, extra_summaries, final)

    def _send_best_metrics(self) -> None:
        """Lifecycle: each learner gets its policy's average ``--save_best_metric`` and saves a new best itself."""
        if not self.stopping:
            for learner, value in self.reporting.best_metrics(self.state.component_names):
                self.send(learner, "on_best_metric", value)

    def _check_stop_conditions(self) -> None:
        self.supervision.check()
        self.state.check_stop_conditions(self, self.stats.env_steps)

    # ---------------------------------------------------------------- what the stop conditions may do (RunEnd)
    def reached_end(self) -> None:
        """``--train_for_*`` reached: the done marker, then the evaluations due by now, finished before the stop."""
        self._mark_done()
        self.evaluations.request_final(self.stats.env_steps)

    def _mark_done(self) -> None:
        self.state.write_done_marker(self.stats.env_steps)

    def stop_timeout(self, still_running: list[str]) -> float:
        return self.evaluations.stop_timeout(STOP_TIMEOUT, still_running)

    def abandon(self, components: list[str], reason: str) -> None:
        self.supervision.abandon(components, reason)

    # ---------------------------------------------------------------- shutdown
    def request_stop(self, save: bool = True) -> None:
        if self.stopping:
            return
        self._report(final=True)
        self.timeline.mark("stop_requested")
        self.state.stop_requested()
        unreachable = []
        for name in self.state.component_names:
            if self.supervision.unreachable(name):
                continue
            args = (save,) if self.state.component_kinds.get(name) == "learner" else ()
            try:
                self.send(name, "on_stop_requested", *args)
            except UndeliverableMessage as error:  # its loop is gone: nothing left to stop there
                log.error("%s; counting %s as stopped", error, name)
                self.state.status = ExperimentStatus.FAILURE
                unreachable.append(name)
        for name in unreachable:
            self.count_as_stopped(name)
        self.supervision.stopping()

    def finish(self) -> None:
        """Every component stopped (or those left did not in time): the last summaries, then the loop ends."""
        self.reporting.log_late_rewards()
        self.timeline.mark("components_stopped")
        self.call_user_code(self.hooks.notify, "on_stop")
        self._write_summaries(final=True)
        self.reporting.close()
        self.loop.component_stopped(self.name)
        self.loop.stop()

    def print_final_report(self) -> None:
        self.reporting.log_final_report(self.timing.tree_str(), self.state, self.supervision.restarts_total)

    def _report_order(self) -> list[str]:
        return self.state.report_order()

    def run_loop(self) -> StatusCode:
        self.loop.run()
        self.print_final_report()
        return self.status


class RunnerControl:
    """The runner's component as its process watch sees it (``run_control.RunControl``): questions about readiness,
    heartbeats and counts, and the few acts it may take on the run."""

    def __init__(self, component: RunnerComponent) -> None:
        self.component = component
        self.state = component.state

    @property
    def component_kinds(self) -> dict[str, str]:
        return self.state.component_kinds

    @property
    def rollout_workers(self) -> list[str]:
        return self.state.rollout_workers

    @property
    def stopping(self) -> bool:
        return self.state.stopping

    @property
    def sampling_started(self) -> bool:
        return self.state.sampling_started_at is not None

    def send(self, component: str, slot: str, *args) -> None:
        self.component.send(component, slot, *args)

    def is_ready(self, component: str) -> bool:
        return component in self.state.ready

    def is_stopped(self, component: str) -> bool:
        return component in self.state.stopped_trees

    def seconds_silent(self, components: list[str]) -> float | None:
        return self.state.seconds_silent(components)

    def env_steps_of(self, policy_id: int) -> int:
        return self.component.stats.env_steps[policy_id]

    def forget_components(self, names: list[str]) -> None:
        self.component.evaluations.components_gone(names)
        self.state.forget(names)

    def resume_rollout_worker(self, name: str) -> None:
        component = self.component
        for (receiver, slot, _), args in component.replayed.items():
            if receiver == name:
                component.send(receiver, slot, *args)
        component.send(name, "on_begin_sampling")

    def fail(self, message: str) -> None:
        log.error("%s", message)
        self.state.status = ExperimentStatus.FAILURE
        self.component.request_stop()

    def count_as_stopped(self, component: str) -> None:
        self.component.count_as_stopped(component)
