"""The runner's side of ``--eval_every_env_steps``: it asks the evaluator when the schedule says, and hands on what
comes back.

:class:`RunEvaluations` wraps the schedule and the results of ``evaluation_reports`` for the runner's component:
every question is answered for a run without an evaluator too (nothing is due, nothing to wait for), so the
component needs no special case. It changes the run only by sending the evaluator its requests
(``on_evaluate``, and ``on_final_evaluations`` once the run reaches its end), through the ``send`` it is given.
"""

from __future__ import annotations

from collections.abc import Callable

from sample_factory.algo.runners.evaluation_reports import EvaluationResults, EvaluationSchedule, summary_step
from sample_factory.algo.utils.wiring import evaluator_name
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config, PolicyID


class RunEvaluations:
    """When to ask the evaluator and what its results become (module docstring)."""

    def __init__(self, cfg: Config, send: Callable[..., None]) -> None:
        self.cfg = cfg
        self.send = send
        self.schedule: EvaluationSchedule | None = None  # None: the run has no evaluator
        self.results: EvaluationResults | None = None

    def attach(self, component_kinds: dict[str, str]) -> None:
        """The run's components are known: an evaluator among them turns the schedule on."""
        if evaluator_name() in component_kinds:
            self.schedule = EvaluationSchedule(self.cfg.eval_every_env_steps, self.cfg.num_policies)
            self.results = EvaluationResults(self.cfg)

    def component_ready(self, name: str) -> bool:
        """True when ``name`` is the evaluator (first start or a restarted process): it takes requests from now on."""
        if name != evaluator_name():
            return False
        self.schedule.evaluator_ready()
        return True

    def components_gone(self, names: list[str]) -> None:
        """Components that stopped or died: the evaluator among them takes no requests until it is ready again."""
        if self.schedule is not None and evaluator_name() in names:
            self.schedule.evaluator_gone()

    def request_due(self, env_steps: dict[PolicyID, int]) -> None:
        """Ask the evaluator for the next due evaluation, if it is free and one is due."""
        if self.schedule is None:
            return
        request = self.schedule.next_request(env_steps)
        if request is not None:
            self.send(evaluator_name(), "on_evaluate", *request)

    def request_final(self, env_steps: dict[PolicyID, int]) -> None:
        """The run reached its end: the evaluator finishes the evaluations due by now before it stops."""
        requests = None if self.schedule is None else self.schedule.final_requests(env_steps)
        if requests is not None:
            self.send(evaluator_name(), "on_final_evaluations", requests)

    def stop_timeout(self, default: float, still_running: list[str]) -> float:
        """How long a stopping run waits for ``still_running``: longer for an evaluator finishing the final
        evaluations."""
        if self.schedule is None:
            return default
        return self.schedule.stop_timeout(default, set(still_running), evaluator_name())

    def finished(self) -> None:
        """The evaluator answered the request under way (a result or a failure): it is free again."""
        self.schedule.finished()

    def failed(self, policy_id: PolicyID, env_steps: int, error: str) -> None:
        """The evaluation under way failed (the evaluator logged its traceback): one line, training goes on."""
        log.warning("Evaluation of policy %d at %d env steps failed (%s), training goes on", policy_id, env_steps,
                    error)  # fmt: skip
        self.schedule.finished()

    def record(
        self, policy_id: PolicyID, env_steps: int, results: dict[str, float], frameskip: int
    ) -> tuple[dict[str, float], int]:
        """A result into eval.csv and its log line; returns its ``eval/*`` scalars and their summary step."""
        scalars = self.results.record(policy_id, env_steps, results)
        return scalars, summary_step(self.cfg, env_steps, frameskip)
