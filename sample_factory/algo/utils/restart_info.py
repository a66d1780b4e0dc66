"""What the components of a restarted process are told about the one they replace (see ``runners.respawn``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RestartInfo:
    """Given to the components of a process that replaces a dead or hung one.

    ``incarnation``: 1 for the first replacement, 2 for the next, ... (for logs).
    ``withheld_slots``: for a rollout worker, its trajectory slots that batchers still hold (policy -> slots); they
    come back by ``on_slots_freed`` and must not be in the new worker's free list before then.
    """

    incarnation: int
    withheld_slots: dict[int, list[int]] = field(default_factory=dict)
