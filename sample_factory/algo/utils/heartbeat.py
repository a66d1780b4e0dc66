"""A component that reports to the runner that it is alive, on a timer (Sample Factory 2's
``HeartbeatStoppableEventLoopObject``).

The runner warns about a component that stays silent for two ``--heartbeat_interval`` periods (and in parallel mode
restarts its process past ``--heartbeat_timeout``). The library's own components send ``on_heartbeat`` from a timer
of their event loop; a component of the user's own, added to a loop, gets the same by deriving from this class.
"""

from __future__ import annotations

from sample_factory.messaging.event_loop import RUNNER, Component, EventLoop

# Sample Factory 2's default heartbeat period, in seconds
DEFAULT_HEARTBEAT_INTERVAL_S = 10.0


class HeartbeatStoppableEventLoopObject(Component):
    """A component on ``evt_loop`` named ``unique_name`` that sends ``on_heartbeat(name)`` to the runner every
    ``interval_sec`` seconds while the loop runs, and stops (leaves the loop) on ``on_stop_requested``.

    Subclasses add their own ``on_<event>`` slots as any component does. Without a runner on the loop's router (a
    loop run by itself, in a test) the heartbeats go nowhere.
    """

    def __init__(
        self, evt_loop: EventLoop, unique_name: str, interval_sec: float = DEFAULT_HEARTBEAT_INTERVAL_S
    ) -> None:
        if interval_sec <= 0:
            raise ValueError(f"interval_sec={interval_sec} must be > 0 (the seconds between two heartbeats)")
        super().__init__(unique_name, evt_loop.router)
        self.interval_sec = float(interval_sec)
        self.heartbeats_sent = 0
        evt_loop.add_component(self)
        evt_loop.add_timer(self.interval_sec, self.heartbeat)

    def heartbeat(self) -> None:
        """Tell the runner this component is alive (what the timer calls)."""
        if self.router.has_component(RUNNER):
            self.send(RUNNER, "on_heartbeat", self.name)
        self.heartbeats_sent += 1

    def on_stop_requested(self, *args: object) -> None:
        """Leave the loop: it ends once every component on it has stopped."""
        if self.loop is not None:
            self.loop.component_stopped(self.name)
