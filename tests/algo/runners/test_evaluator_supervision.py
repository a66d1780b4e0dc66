"""A dead evaluator process (parallel mode): restarted in place without disturbing anyone, or, when it may not be,
the training goes on without evaluations instead of stopping."""

from __future__ import annotations

import logging

from sample_factory.algo.runners.components import LoopSpec
from sample_factory.algo.runners.process_watch import ProcessWatch
from sample_factory.algo.utils.wiring import evaluator_name
from sample_factory.cfg.arguments import default_cfg

EVALUATOR = evaluator_name()


class FakeProcesses:
    """The evaluator's process, which died with ``exit_code``."""

    def __init__(self, exit_code: int) -> None:
        spec = LoopSpec(EVALUATOR, "evaluator", [EVALUATOR], build=lambda router, shared: [])
        self.specs = {EVALUATOR: spec}
        self.exit_code = exit_code
        self.started: list[str] = []
        self.exited: list[str] = []
        self.dead: set[str] = set()

    def take_queue_repairs(self) -> list:
        return []

    def dead_processes(self) -> list[tuple[str, int]]:
        dead, self.exit_code = ([(EVALUATOR, self.exit_code)] if self.exit_code is not None else []), None
        self.dead.update(name for name, _ in dead)
        return dead

    def death_reason(self, name: str) -> None:
        return None

    def components_of(self, name: str) -> list[str]:
        return self.specs[name].component_names

    def mark_exited(self, name: str) -> None:
        self.exited.append(name)

    def alive(self, name: str) -> bool:
        return name not in self.dead

    def loop_of(self, component: str) -> str:
        return component

    def switch_inbox(self, name: str) -> int:
        return 0

    def start(self, spec: LoopSpec, restart=None) -> None:
        self.started.append(spec.name)
        self.dead.discard(spec.name)


class FakeRun:
    """The runner's component as the process watch sees it; records what it is told."""

    component_kinds = {EVALUATOR: "evaluator", "learner_p0": "learner", "rollout_w0": "rollout"}
    rollout_workers = ["rollout_w0"]
    stopping = False
    sampling_started = True

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.stopped: list[str] = []
        self.forgotten: list[str] = []
        self.sent: list[tuple] = []
        self.ready: set[str] = set()

    def is_stopped(self, component: str) -> bool:
        return component in self.stopped

    def fail(self, message: str) -> None:
        self.failed.append(message)

    def count_as_stopped(self, component: str) -> None:
        self.stopped.append(component)

    def forget_components(self, names: list[str]) -> None:
        self.forgotten.extend(names)

    def send(self, component: str, slot: str, *args) -> None:
        self.sent.append((component, slot, *args))

    def is_ready(self, component: str) -> bool:
        return component in self.ready

    def seconds_silent(self, components: list[str]) -> None:
        return None


def _watch(max_restarts: int, exit_code: int) -> tuple[ProcessWatch, FakeProcesses, FakeRun]:
    cfg = default_cfg(env="x")
    cfg.max_restarts = max_restarts
    processes, run = FakeProcesses(exit_code), FakeRun()
    watch = ProcessWatch(cfg, list(processes.specs.values()), processes, run, restarts_allowed=True)
    return watch, processes, run


def test_a_dead_evaluator_is_started_again_and_nobody_else_hears_of_it():
    watch, processes, run = _watch(max_restarts=3, exit_code=-9)
    watch.check()
    assert processes.started == [EVALUATOR] and run.forgotten == [EVALUATOR]
    run.ready.add(EVALUATOR)
    watch.component_ready_again(EVALUATOR)
    assert run.sent == [] and run.failed == [] and watch.respawner.current is None


def test_an_evaluator_that_may_not_be_restarted_ends_the_evaluations_not_the_run(caplog):
    watch, processes, run = _watch(max_restarts=0, exit_code=1)
    with caplog.at_level(logging.ERROR):
        watch.check()
    assert processes.started == [] and run.failed == []
    assert run.stopped == [EVALUATOR] and processes.exited == [EVALUATOR]
    assert "No more evaluations in this run" in caplog.text
