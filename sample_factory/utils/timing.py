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


class TimingTreeNode:
    """One ``add_time`` key at one place in the tree of a :class:`Timing`; ``seconds`` includes its children's time.

    A :class:`Timing` builds these as blocks are entered; a node built directly (no ``timing``) is a detached tree
    that can only hold numbers.
    """

    __slots__ = ("key", "seconds", "children", "context")

    def __init__(self, key: str = "", timing: Timing | None = None) -> None:
        self.key = key
        self.seconds = 0.0
        self.children: dict[str, TimingTreeNode] = {}
        # Built once per tree position so that re-entering a key allocates no new context object.
        self.context = None if timing is None else _AddTimeContext(timing, self)


class _AddTimeContext:
    """Reusable context manager of one tree node: entering opens the node, leaving adds the elapsed time."""

    __slots__ = ("_timing", "_node")

    def __init__(self, timing: Timing, node: TimingTreeNode) -> None:
        self._timing = timing
        self._node = node

    def __enter__(self) -> None:
        self._timing._open(self._node)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._timing._close()


class AvgTime:
    """The mean of the last ``num_values_to_avg`` values added: a duration smoothed over a few recent runs.

    ``float(avg)`` and ``avg.mean`` read the mean (0 before the first value); ``str(avg)`` is the mean with 4
    decimals, as in the timing reports.
    """

    __slots__ = ("values",)

    def __init__(self, num_values_to_avg: int) -> None:
        if num_values_to_avg < 1:
            raise ValueError(f"AvgTime(num_values_to_avg={num_values_to_avg}): average over at least 1 value")
        self.values: deque[float] = deque(maxlen=num_values_to_avg)

    def add(self, value: float) -> float:
        """Add a value (dropping the oldest once the window is full) and return the new mean."""
        self.values.append(value)
        return self.mean

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values) if self.values else 0.0

    def __float__(self) -> float:
        return self.mean

    def __str__(self) -> str:
        return f"{self.mean:.4f}"


class _TimeitContext:
    """Stores the duration of the latest measurement under a key (``timeit``) or folds it into an average."""

    __slots__ = ("_timing", "_key", "_window", "_start")

    def __init__(self, timing: Timing, key: str, window: AvgTime | None) -> None:
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
            self._timing._values[self._key] = window.add(elapsed)


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
        self._root = TimingTreeNode(_ROOT_KEY, self)
        # Parallel stacks of the open add_time nodes and their start times; the root is always at the bottom.
        self._open_nodes: list[TimingTreeNode] = [self._root]
        self._start_times: list[float] = []
        self._timeit_contexts: dict[str, _TimeitContext] = {}
        self._avg_contexts: dict[tuple[str, int], _TimeitContext] = {}

    @property
    def name(self) -> str:
        return self._name

    @property
    def root(self) -> TimingTreeNode:
        """The unnamed root of the ``add_time`` tree: its children are the top-level keys (see :meth:`tree_str`)."""
        return self._root

    def add_time(self, key: str) -> _AddTimeContext:
        """Accumulate the time spent in the block under ``key`` (a child of the innermost open ``add_time``)."""
        parent = self._open_nodes[-1]
        node = parent.children.get(key)
        if node is None:
            node = TimingTreeNode(key, self)
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
            context = _TimeitContext(self, key, AvgTime(average))
            self._avg_contexts[(key, average)] = context
        return context

    def _open(self, node: TimingTreeNode) -> None:
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


def _layout_level(parent: TimingTreeNode, indent: int, lines: list[str]) -> None:
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


class TimingContext:
    """The block measurement of a :class:`Timing` chosen by arguments: ``additive`` accumulates like ``add_time``,
    ``average=N`` keeps the mean of the last N runs like ``time_avg``, neither keeps the latest duration like
    ``timeit``. ``with TimingContext(timing, "step", additive=True):`` is ``with timing.add_time("step"):``.
    """

    __slots__ = ("_context",)

    def __init__(self, timing: Timing, key: str, additive: bool = False, average: int | None = None) -> None:
        if additive and average is not None:
            raise ValueError(f"TimingContext({key!r}): choose additive=True or average={average}, not both")
        if additive:
            self._context: _AddTimeContext | _TimeitContext = timing.add_time(key)
        elif average is not None:
            self._context = timing.time_avg(key, average)
        else:
            self._context = timing.timeit(key)

    def __enter__(self) -> None:
        self._context.__enter__()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._context.__exit__(exc_type, exc, tb)


_global_profiler: Timing | None = None


def init_global_profiler(t: Timing) -> Timing:
    """Make ``t`` this process's global profiler (see :func:`global_profiler`) and return it.

    For code deep in a call stack that has no ``Timing`` passed to it, e.g. an env wrapper: it measures into
    ``global_profiler()`` when one was set, and the component that owns ``t`` reports it with its own timings.
    """
    global _global_profiler
    if not isinstance(t, Timing):
        raise TypeError(f"init_global_profiler takes a Timing, got {type(t).__name__}: pass Timing('name')")
    _global_profiler = t
    return t


def global_profiler() -> Timing | None:
    """The Timing set by :func:`init_global_profiler` in this process, or None."""
    return _global_profiler
