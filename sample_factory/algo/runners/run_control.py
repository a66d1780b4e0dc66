"""The two small interfaces between the runner's component and the parallel runner's process supervision.

The runner's component (:class:`~sample_factory.algo.runners.runner_component.RunnerComponent`) owns the run; the
state of the run (which components are ready, their heartbeats, the stop request and the status) is its
``run_state.RunState``. In parallel mode a :class:`Supervision` (``process_watch.ProcessWatch``) decides what the
death of a child process means; it sees and acts on the run only through :class:`RunControl`, which the component
gives it as ``component.control`` (``runner_component.RunnerControl``). Serial mode has no processes to supervise:
:class:`NoSupervision` answers every question with "nothing to do".
"""

from __future__ import annotations

from typing import Protocol


class RunControl(Protocol):
    """What the runner's component lets its process watch see and do."""

    component_kinds: dict[str, str]  # component name -> "rollout", "inference", "batcher" or "learner"
    rollout_workers: list[str]  # in worker order

    @property
    def stopping(self) -> bool:
        """A stop was requested: no restarts any more."""

    @property
    def sampling_started(self) -> bool:
        """Every component was ready once: deaths from now on may be restarted."""

    def send(self, component: str, slot: str, *args) -> None: ...

    def is_ready(self, component: str) -> bool: ...

    def is_stopped(self, component: str) -> bool: ...

    def seconds_silent(self, components: list[str]) -> float | None:
        """Seconds since the least recent heartbeat of ``components`` (None before any of them was ready)."""

    def env_steps_of(self, policy_id: int) -> int: ...

    def forget_components(self, names: list[str]) -> None:
        """Components of a dead process: not ready, no heartbeat expected until they are back."""

    def resume_rollout_worker(self, name: str) -> None:
        """A restarted rollout worker is ready: replay what it missed, then start its sampling."""

    def fail(self, message: str) -> None:
        """Log ``message``, set the status to FAILURE and stop the run (checkpoints are saved)."""

    def count_as_stopped(self, component: str) -> None:
        """A component that will never answer the stop request (its process is gone)."""


class Supervision(Protocol):
    """What the runner's component asks of whoever watches the worker processes."""

    restarts_total: int

    def check(self) -> None:
        """Periodic: dead, silent or cut-off processes."""

    def component_ready_again(self, name: str) -> None:
        """``name`` reported ready while training runs: a restarted process's component."""

    def on_restart_ack(self, token: int, name: str, payload: dict | None) -> None: ...

    def record_traceback(self, component_or_loop: str, tb: str) -> None: ...

    def learner_resumed(self, policy_id: int, env_steps: int) -> int | None:
        """Env steps a restarted learner lost by resuming from its checkpoint (None if it was not restarted)."""

    def unreachable(self, component: str) -> bool:
        """The component's process died and was not replaced: there is nothing to tell it."""

    def stopping(self) -> None:
        """The run stops: no more restarts; components of dead processes count as stopped."""

    def abandon(self, components: list[str], reason: str) -> None:
        """The run stops and ``components`` are stuck in user code that never returns (an env's reset, say): their
        processes cannot answer the stop request, so they are ended now instead of after the stop and join timeouts.
        """


class NoSupervision:
    """Serial mode: every component lives in this process, on the runner's loop."""

    restarts_total = 0

    def check(self) -> None:
        pass

    def component_ready_again(self, name: str) -> None:
        pass

    def on_restart_ack(self, token: int, name: str, payload: dict | None) -> None:
        pass

    def record_traceback(self, component_or_loop: str, tb: str) -> None:
        pass

    def learner_resumed(self, policy_id: int, env_steps: int) -> int | None:
        return None

    def unreachable(self, component: str) -> bool:
        return False

    def stopping(self) -> None:
        pass

    def abandon(self, components: list[str], reason: str) -> None:
        pass
