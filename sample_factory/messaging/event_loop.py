"""A small per-process event loop: components, addressed messages and timers.

Every process (and, in serial mode, the single process) runs one ``EventLoop``.
Components live on a loop and talk to each other only through messages
``(component_name, slot_name, args)``. A message to a component on the same
loop is appended to a local deque; a message to another loop goes through
that loop's inbox, a faster-fifo queue. This is the transport seam: serial
mode and tests use :class:`LocalInbox` and nothing else changes.

Messages carry only small control data (indices, versions, stats); bulk data
lives in shared-memory tensors (see ``shared_buffers``).

No message is ever dropped. A full inbox is back-pressure: the sender waits
until there is room, logging a warning that names the destination every
``BACKPRESSURE_WARNING_PERIOD`` seconds. Only when the destination's loop has
exited (it ended, or its process died: see :class:`LoopLiveness`) can the
inbox never drain; the send then raises :class:`UndeliverableMessage`, and the
loop of the sender reports it to the runner as an error of the destination
component, which ends the run. Control messages are bounded by the protocol
(one request in flight per split, one reply per request, periodic stats), so
in a healthy run inboxes never come close to full.
"""

from __future__ import annotations

import collections
import queue
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from sample_factory.utils.logging_setup import log
from sample_factory.utils.timing import Timing

Message = tuple[str, str, tuple]

# the address of the runner, the supervisor every loop reports its components' errors to
RUNNER = "runner"

# faster-fifo queue size; control messages are tiny, this leaves room for bursts of stats
INBOX_MAX_BYTES = 10 * 1024 * 1024
# a sender blocked on a full inbox checks this often whether the destination loop still runs
BACKPRESSURE_RETRY_PERIOD = 0.5
# ... and warns this often while it waits
BACKPRESSURE_WARNING_PERIOD = 10.0


def make_mp_inbox(max_bytes: int = INBOX_MAX_BYTES) -> Any:
    """A faster-fifo queue usable across processes (passed to children at spawn)."""
    from faster_fifo import Queue

    return Queue(max_size_bytes=max_bytes)


class UndeliverableMessage(RuntimeError):
    """A message whose destination inbox is full and can never drain, because the destination loop has exited."""

    def __init__(self, component: str, slot: str, loop_name: str) -> None:
        super().__init__(
            f"message {component}.{slot} cannot be delivered: the inbox of loop {loop_name!r} (component "
            f"{component!r}) is full and that loop has exited (its process ended or died)"
        )
        self.component = component
        self.slot = slot
        self.loop_name = loop_name


class LoopLiveness:
    """Which event loops have exited, and which inbox each reads, readable from every process (shared tensors).

    A loop marks itself when it stops dispatching; the parallel runner marks the loop of a child process that died.
    Senders read the flag only while an inbox is full, to tell back-pressure (wait) from a dead end (error).

    A restarted loop reads a spare inbox (``inbox_choice``, -1: its first one): a faster-fifo queue whose reader was
    killed while waiting on it keeps a dead waiter in its condition variable, and the next put that wakes a new
    waiter would hang. The old inbox is abandoned; the spares are made at start-up, as queues cannot be shared later.
    """

    def __init__(self, loop_names: Iterable[str], share: bool = False) -> None:
        self.index = {name: i for i, name in enumerate(loop_names)}
        self.flags = torch.zeros(len(self.index), dtype=torch.uint8)
        self.inbox_choice = torch.full((len(self.index),), -1, dtype=torch.int64)
        if share:
            self.flags.share_memory_()
            self.inbox_choice.share_memory_()
        self._choice = self.inbox_choice.numpy()  # numpy reads cost a fraction of torch indexing on every send

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._choice = self.inbox_choice.numpy()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_choice"}

    def switch_inbox(self, loop_name: str, spare: int) -> None:
        """From now on ``loop_name`` reads spare inbox number ``spare`` (set before its new process starts)."""
        self.inbox_choice[self.index[loop_name]] = spare

    def spare_chosen(self, loop_name: str) -> int:
        i = self.index.get(loop_name)
        return -1 if i is None else int(self._choice[i])

    def mark_exited(self, loop_name: str) -> None:
        i = self.index.get(loop_name)
        if i is not None:
            self.flags[i] = 1

    def mark_alive(self, loop_name: str) -> None:
        """A new process runs the loop again (the parallel runner restarted it)."""
        i = self.index.get(loop_name)
        if i is not None:
            self.flags[i] = 0

    def exited(self, loop_name: str) -> bool:
        i = self.index.get(loop_name)
        return i is not None and bool(self.flags[i])


class LocalInbox:
    """In-process inbox with the faster-fifo interface used here (serial mode, tests)."""

    def __init__(self) -> None:
        self._messages: collections.deque = collections.deque()

    def put(self, msg: Any, block: bool = True, timeout: float = 0.0) -> None:
        self._messages.append(msg)

    def get_many(self, block: bool = True, timeout: float = 0.0, max_messages_to_get: int = 1_000_000) -> list:
        if not self._messages:
            if block and timeout > 0:
                time.sleep(timeout)  # nothing can arrive in-process while we wait: just let timers come due
            raise queue.Empty
        msgs = list(self._messages)
        self._messages.clear()
        return msgs

    def close(self) -> None:
        self._messages.clear()


@dataclass
class _Timer:
    period: float
    callback: Callable[[], None]
    next_time: float = field(default=0.0)
    once: bool = False


class Router:
    """Knows which loop every component lives on and delivers messages there, never dropping one."""

    def __init__(
        self,
        component_loops: dict[str, str],
        inboxes: dict[str, Any],
        liveness: LoopLiveness | None = None,
        spare_inboxes: list[Any] | None = None,
    ) -> None:
        self.component_loops = component_loops  # component name -> loop name
        self.inboxes = inboxes  # loop name -> inbox
        self.liveness = liveness if liveness is not None else LoopLiveness(inboxes)
        self.spare_inboxes: list[Any] = list(spare_inboxes or ())
        self.local_loop: EventLoop | None = None
        self.retry_period = BACKPRESSURE_RETRY_PERIOD
        self.warning_period = BACKPRESSURE_WARNING_PERIOD

    def send(self, component: str, slot: str, *args: Any) -> None:
        loop_name = self.component_loops[component]
        local = self.local_loop
        if local is not None and loop_name == local.name:
            local.local_messages.append((component, slot, args))
            return
        self.deliver(loop_name, (component, slot, args))

    def deliver(self, loop_name: str, msg: Message) -> None:
        """Put ``msg`` into the inbox of ``loop_name``; thread-safe, wakes that loop if it waits for messages.

        While the inbox is full this waits (back-pressure), warning every ``warning_period`` seconds; it raises
        :class:`UndeliverableMessage` only once the destination loop has exited, as its inbox can then never drain.
        """
        inbox = self.inbox_of(loop_name)
        try:
            inbox.put(msg, block=True, timeout=self.retry_period)
            return
        except queue.Full:
            pass
        self._wait_for_room(loop_name, msg)

    def inbox_of(self, loop_name: str) -> Any:
        """The inbox ``loop_name`` reads now: its first one, or the spare it was given when it was restarted."""
        spare = self.liveness.spare_chosen(loop_name) if self.spare_inboxes else -1
        return self.inboxes[loop_name] if spare < 0 else self.spare_inboxes[spare]

    def _wait_for_room(self, loop_name: str, msg: Message) -> None:
        component, slot, _ = msg
        started = last_warning = time.monotonic()
        while True:
            if self.liveness.exited(loop_name):
                raise UndeliverableMessage(component, slot, loop_name)
            now = time.monotonic()
            if now - last_warning >= self.warning_period:
                log.warning(
                    "The inbox of %s (loop %s) has been full for %.0f s: message %s waits for room",
                    component,
                    loop_name,
                    now - started,
                    slot,
                )
                last_warning = now
            try:
                self.inbox_of(loop_name).put(msg, block=True, timeout=self.retry_period)
                return
            except queue.Full:
                pass

    def has_component(self, component: str) -> bool:
        return component in self.component_loops


class Component:
    """Base of everything that lives on an event loop: a name, a Timing and a way to send."""

    def __init__(self, name: str, router: Router) -> None:
        self.name = name
        self.router = router
        self.timing = Timing(name)
        self.loop: EventLoop | None = None

    def send(self, component: str, slot: str, *args: Any) -> None:
        self.router.send(component, slot, *args)

    def on_start(self) -> None:
        """Called once when the loop starts (allocate, create envs, ...)."""

    def after_messages(self) -> None:
        """Called after each drained batch of messages (e.g. run one batched forward pass)."""

    def on_stop(self) -> None:
        """Release resources; the loop exits once every component has stopped."""


class EventLoop:
    """Dispatches messages from the inbox (and local deque) to components; runs timers."""

    def __init__(self, name: str, inbox: Any, router: Router, idle_timeout: float = 0.1) -> None:
        self.name = name
        self.inbox = inbox
        self.router = router
        self.local_messages: collections.deque = collections.deque()
        self.components: dict[str, Component] = {}
        self._after_hooks: list[Callable[[], None]] = []
        self._timers: list[_Timer] = []
        self._slots: dict[tuple[str, str], Callable] = {}
        self.idle_timeout = idle_timeout
        self.running = False
        self._stopped_components: set[str] = set()
        router.local_loop = self

    def add_component(self, component: Component) -> None:
        component.loop = self
        self.components[component.name] = component
        if type(component).after_messages is not Component.after_messages:
            self._after_hooks.append(component.after_messages)

    def add_after_hook(self, hook: Callable[[], None]) -> None:
        """``hook()`` runs after every iteration's messages, like a component's ``after_messages``."""
        self._after_hooks.append(hook)

    def add_timer(self, period: float, callback: Callable[[], None], first_delay: float | None = None) -> None:
        delay = period if first_delay is None else first_delay
        self._timers.append(_Timer(period, callback, time.monotonic() + delay))

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` once, ``delay`` seconds from now."""
        self._timers.append(_Timer(delay, callback, time.monotonic() + delay, once=True))

    def stop(self) -> None:
        self.running = False

    def component_stopped(self, name: str) -> None:
        """A component finished; the loop ends once all of its components have."""
        self._stopped_components.add(name)
        if self._stopped_components >= set(self.components):
            self.running = False

    def run(self) -> None:
        self.start_components()
        try:
            while self.running:
                self.run_once()
        finally:
            # from here on nothing reads this inbox: a sender waiting for room in it must fail, not wait forever
            self.router.liveness.mark_exited(self.name)
        self.stop_components()

    def start_components(self) -> None:
        """First half of ``run()``: mark the loop running and start every component.

        For a caller that drives the loop itself with ``run_once()`` (the synchronous sampling API in serial mode
        pumps it only while its user waits for data) and ends with ``stop_components()``.
        """
        self.running = True
        for component in list(self.components.values()):
            component.on_start()

    def stop_components(self) -> None:
        """Last half of ``run()``: every component releases its resources (closes envs, ...)."""
        self.router.liveness.mark_exited(self.name)
        for component in list(self.components.values()):
            component.on_stop()

    def run_once(self) -> None:
        """One iteration: timers, then every waiting message, then the after-message hooks."""
        timeout = self._run_due_timers()
        self._dispatch_all(timeout)
        for hook in self._after_hooks:
            try:
                hook()
            except UndeliverableMessage as error:
                self._report_undeliverable(error)

    def post(self, component: str, slot: str, *args: Any) -> None:
        """Send to a component of this loop from another thread: through the inbox, so a waiting loop wakes up."""
        self.router.deliver(self.name, (component, slot, args))

    def _run_due_timers(self) -> float:
        if not self._timers:
            return self.idle_timeout
        now = time.monotonic()
        soonest = now + self.idle_timeout
        expired = None
        for timer in self._timers:  # no copy: this runs on every loop iteration
            if now >= timer.next_time:
                try:
                    timer.callback()
                except UndeliverableMessage as error:
                    self._report_undeliverable(error)
                if timer.once:
                    expired = expired or []
                    expired.append(timer)
                    continue
                timer.next_time = now + timer.period
            soonest = min(soonest, timer.next_time)
        for timer in expired or ():
            self._timers.remove(timer)
        return max(0.0, soonest - time.monotonic())

    def _dispatch_all(self, timeout: float) -> None:
        if self.local_messages:
            timeout = 0.0
        try:
            remote = self.inbox.get_many(block=timeout > 0, timeout=timeout)
        except queue.Empty:
            remote = ()
        for msg in remote:
            self._dispatch(msg)
        # local messages may spawn further local messages; process all of them now
        local = self.local_messages
        while local and self.running:
            self._dispatch(local.popleft())

    def _dispatch(self, msg: Message) -> None:
        component, slot, args = msg
        key = (component, slot)
        method = self._slots.get(key)
        if method is None:
            target = self.components.get(component)
            if target is None:
                log.warning("Loop %s: message for unknown component %s.%s", self.name, component, slot)
                return
            method = getattr(target, slot)
            self._slots[key] = method
        try:
            method(*args)
        except UndeliverableMessage as error:
            self._report_undeliverable(error)

    def _report_undeliverable(self, error: UndeliverableMessage) -> None:
        """A message could not be delivered (its destination is gone): an error of that component, ending the run.

        The runner hears of it as ``on_component_error`` of the destination component. If the runner cannot be
        told either (its own loop is gone), this loop stops: nothing it does can reach anyone any more.
        """
        log.error("Loop %s: %s", self.name, error)
        text = f"{error}\n(raised in loop {self.name!r}:)\n{traceback.format_exc()}"
        try:
            if self.router.has_component(RUNNER) and error.component != RUNNER:
                self.router.send(RUNNER, "on_component_error", error.component, text)
                return
        except UndeliverableMessage:
            pass
        log.error("Loop %s: the runner cannot be told either, stopping this loop", self.name)
        self.running = False
