"""Cheap wall-clock profiling for the hot loops of every component.

Each component owns one :class:`Timing` (one per thread: nothing here is locked) and wraps
its hot spots in ``with timing.add_time("key"):``. At exit the component prints
``timing.tree_str()`` so a user can see where the seconds went without a profiler.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType

Clock = Callable[[], float]

_ROOT_KEY = "__root__"


class _Node:
    """One ``add_time`` key at one place in the tree; ``seconds`` includes its children's time."""

    __slots__ = ("key", "seconds", "children", "context")

    def __init__(self, key: str, timing: Timing) -> None:
        self.key = key
        self.seconds = 0.0
        self.children: dict[str, _Node] = {}
        # Built once per tree position so that re-entering a key allocates no new context object.
        self.context = _AddTimeContext(timing, self)


class _AddTimeContext:
    """Reusable context manager of one tree node: entering opens the node, leaving adds the elapsed time."""

    __slots__ = ("_timing", "_node")

    def __init__(self, timing: Timing, node: _Node) -> None:
        self._timing = timing
        self._node = node

    def __enter__(self) -> None:
        self._timing._open(self._node)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._timing._close()


class _TimeitContext:
    """Stores the duration of the latest measurement under a key (``timeit``) or folds it into an average."""

    __slots__ = ("_timing", "_key", "_window", "_start")

    def __init__(self, timing: Timing, key: str, window: deque[float] | None) -> None:
        self._timing = timing
        self._key = key
        self._window = window
        self._start = 0.0

    def __enter__(self) -> None:
        self._start = self._timing._clock()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        elapsed = self._timing._clock() - self._start
        window = self._window
        if window is None:
            self._timing._values[self._key] = elapsed
        else:
            window.append(elapsed)
            self._timing._values[self._key] = sum(window) / len(window)


class Timing:
    """Named collection of timings read as ``timing.key`` or ``timing[key]``.

    Three ways to measure a block, all context managers:

    * ``add_time(key)`` accumulates seconds under ``key``. A key entered while another ``add_time``
      block is open becomes a child of that block, so nested blocks form a tree (see :meth:`tree_str`).
      The same key under two different parents is two tree nodes; its flat value is their sum.
    * ``timeit(key)`` keeps only the duration of the latest run.
    * ``time_avg(key, average=10)`` keeps the mean of the last ``average`` runs.

    ``timeit`` and ``time_avg`` keys are reported by ``str()`` only; they do not appear in the tree and
    are transparent for nesting (an ``add_time`` inside them attaches to the enclosing ``add_time``).

    A key that shares its name with a method (``get``, ``items``, ``name``, ...) is read as ``timing[key]``.

    ``clock`` exists so tests can drive the measurements deterministically; it defaults to
    :func:`time.perf_counter`, the highest-resolution monotonic clock.
    """

    def __init__(self, name: str = "Profile", *, clock: Clock = time.perf_counter) -> None:
        self._name = name
        self._clock = clock
        self._values: dict[str, float] = {}
        self._root = _Node(_ROOT_KEY, self)
        # Parallel stacks of the open add_time nodes and their start times; the root is always at the bottom.
        self._open_nodes: list[_Node] = [self._root]
        self._start_times: list[float] = []
        self._timeit_contexts: dict[str, _TimeitContext] = {}
        self._avg_contexts: dict[tuple[str, int], _TimeitContext] = {}

    @property
    def name(self) -> str:
        return self._name

    def add_time(self, key: str) -> _AddTimeContext:
        """Accumulate the time spent in the block under ``key`` (a child of the innermost open ``add_time``)."""
        parent = self._open_nodes[-1]
        node = parent.children.get(key)
        if node is None:
            node = _Node(key, self)
            parent.children[key] = node
            self._values.setdefault(key, 0.0)
        return node.context

    def timeit(self, key: str) -> _TimeitContext:
        """Measure the block and store its duration under ``key``, replacing the previous value."""
        context = self._timeit_contexts.get(key)
        if context is None:
            context = _TimeitContext(self, key, None)
            self._timeit_contexts[key] = context
        return context

    def time_avg(self, key: str, average: int = 10) -> _TimeitContext:
        """Measure the block and store under ``key`` the mean duration of the last ``average`` runs."""
        if average < 1:
            raise ValueError(f"time_avg({key!r}, average={average}): average must be at least 1")
        context = self._avg_contexts.get((key, average))
        if context is None:
            context = _TimeitContext(self, key, deque(maxlen=average))
            self._avg_contexts[(key, average)] = context
        return context

    def _open(self, node: _Node) -> None:
        self._open_nodes.append(node)
        self._start_times.append(self._clock())

    def _close(self) -> None:
        elapsed = self._clock() - self._start_times.pop()
        node = self._open_nodes.pop()
        node.seconds += elapsed
        self._values[node.key] += elapsed

    def __getattr__(self, key: str) -> float:
        # Only reached when normal lookup fails; read __dict__ directly so a half-built or
        # unpickled instance raises AttributeError instead of recursing.
        values = self.__dict__.get("_values")
        if values is None or key not in values:
            raise AttributeError(f"Timing {self.__dict__.get('_name')!r} has no measurement {key!r}")
        return values[key]

    def __getitem__(self, key: str) -> float:
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def get(self, key: str, default: float | None = None) -> float | None:
        return self._values.get(key, default)

    def items(self) -> list[tuple[str, float]]:
        """``(key, seconds)`` pairs in first-use order, e.g. to send timings to TensorBoard."""
        return list(self._values.items())

    def flat_str(self) -> str:
        """Flat one-line report of every key: ``Name: key1: 1.2345, key2: 0.5000`` in first-use order.

        ``add_time`` keys appear once with their total over all tree positions, next to the ``timeit`` and
        ``time_avg`` keys; :meth:`tree_str` shows where the ``add_time`` seconds were spent.
        """
        return f"{self._name}: " + _join(self._values.items())

    def __str__(self) -> str:
        """The flat one-line report (:meth:`flat_str`), short enough for a log line."""
        return self.flat_str()

    def tree_str(self) -> str:
        """Indented report of the ``add_time`` tree, the layout of the profiling reports printed at exit.

        The rule, applied at every level (the top level at indent 0, each deeper level two spaces more):

        1. one line with all the level's leaf nodes (nodes with no children), ``key: seconds`` joined
           by ``", "`` (omitted when the level has no leaves);
        2. then, for each node that has children: a line ``key: seconds``, followed by that node's
           children laid out by this same rule at the next indent.

        Seconds have 4 decimals and include the children's time; order is first-use order within each
        group. The Timing's name is not printed: callers add their own header
        (``Learner profile tree view:``). For example::

            wait: 1.0000
            train: 5.0000
              update: 1.5000, tail: 0.2000
              bptt: 3.0000
                forward_head: 1.0000, losses: 1.2000
        """
        lines: list[str] = []
        _layout_level(self._root, 0, lines)
        return "\n".join(lines)


def _format_entry(key: str, seconds: float) -> str:
    return f"{key}: {seconds:.4f}"


def _join(pairs: Iterable[tuple[str, float]]) -> str:
    return ", ".join(_format_entry(key, seconds) for key, seconds in pairs)


def _layout_level(parent: _Node, indent: int, lines: list[str]) -> None:
    """Append the lines of ``parent``'s children (leaves first, then each subtree) at ``indent`` spaces."""
    pad = " " * indent
    children = list(parent.children.values())
    leaves = [(child.key, child.seconds) for child in children if not child.children]
    if leaves:
        lines.append(pad + _join(leaves))
    for child in children:
        if child.children:
            lines.append(pad + _format_entry(child.key, child.seconds))
            _layout_level(child, indent + 2, lines)
