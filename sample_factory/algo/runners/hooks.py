"""User code that a training run calls back: observers (``runner.AlgoObserver``) and episodic stats handlers.

:class:`UserHooks` owns both lists and calls them with the :class:`~sample_factory.algo.runners.runner.Runner`
they were registered on. The runner's component on the event loop holds a ``UserHooks`` and calls it at the
moments ``AlgoObserver`` describes; it never reaches back into the runner for them. Whatever a hook raises
comes back as :class:`ObserverError` naming the hook, so the run can stop with FAILURE and a message that says
whose code failed.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable

from sample_factory.utils.misc import EPISODIC
from sample_factory.utils.typing import PolicyID

# handler(runner, msg, policy_id); msg = {"episodic": {"reward", "len", "true_objective", "episode_extra_stats"},
# "policy_id": policy_id}
EpisodicStatsHandler = Callable[[object, dict, PolicyID], None]
# hooks that Sample Factory 2 did not have: an observer written for it (duck-typed, not an AlgoObserver) may lack them
HOOKS_SINCE_SF2 = ("on_evaluation",)
SUMMARIES_HOOK = "extra_summaries"


class ObserverError(RuntimeError):
    """User code called back by the runner (an observer hook or a stats handler) raised."""


class UserHooks:
    """The observers and episodic stats handlers of one run, called with ``runner`` as their first argument."""

    def __init__(self, runner: object = None) -> None:
        self.runner = runner
        self.observers: list = []  # AlgoObserver instances (or anything with its methods)
        self.stats_handlers: list[EpisodicStatsHandler] = []

    def add_observer(self, observer: object) -> None:
        self.observers.append(observer)

    def add_stats_handler(self, handler: EpisodicStatsHandler) -> None:
        if not callable(handler):
            raise TypeError(
                f"register_episodic_stats_handler needs a callable handler(runner, msg, policy_id), got {handler!r}"
            )
        self.stats_handlers.append(handler)

    @property
    def any(self) -> bool:
        """Whether there is any user code to call (the runner skips the bookkeeping otherwise)."""
        return bool(self.observers or self.stats_handlers)

    def notify(self, hook: str, *args) -> None:
        """Call ``hook(runner, *args)`` on every observer; an exception names the observer and the hook.

        ``extra_summaries`` takes ``(policy_id, writer, env_steps)`` here, the order in which Sample Factory 2 calls
        it; an observer whose method names its parameters step count first, writer second gets them in that order
        (:func:`names_steps_before_writer`)."""
        for observer in self.observers:
            if hook in HOOKS_SINCE_SF2 and not hasattr(observer, hook):
                continue
            try:
                method = getattr(observer, hook)
                if hook == SUMMARIES_HOOK and names_steps_before_writer(method):
                    policy_id, writer, env_steps = args
                    method(self.runner, policy_id, env_steps, writer)
                else:
                    method(self.runner, *args)
            except Exception as exc:
                raise ObserverError(f"{type(observer).__name__}.{hook} failed:\n{traceback.format_exc()}") from exc

    def episode_finished(self, policy_id: PolicyID, reward: float, length: int, objective: float, extra) -> None:
        """Hand one finished episode to every episodic stats handler, in Sample Factory 2's message layout."""
        episode = {"reward": reward, "len": length, "true_objective": objective, "episode_extra_stats": extra or {}}
        msg = {EPISODIC: episode, "policy_id": policy_id}
        for handler in self.stats_handlers:
            try:
                handler(self.runner, msg, policy_id)
            except Exception as exc:
                name = getattr(handler, "__qualname__", repr(handler))
                raise ObserverError(f"episodic stats handler {name} failed:\n{traceback.format_exc()}") from exc


_steps_first: dict[object, bool] = {}  # the function of an extra_summaries method -> names_steps_before_writer


def names_steps_before_writer(method: Callable) -> bool:
    """Whether ``extra_summaries(runner, policy_id, a, b)`` names ``a`` a step count and ``b`` a writer.

    Sample Factory 2 passes ``(runner, policy_id, writer, env_steps)`` positionally, and observers written for it
    take them in that order (under names of their own); its base class, though, names them ``env_steps, writer``,
    and observers that kept those names and use them as named (``writer.add_scalar(tag, value, env_steps)``) exist
    too. Their names are unambiguous, so such a method gets the values its names ask for. Looked up once per
    method.
    """
    function = getattr(method, "__func__", method)
    try:
        return _steps_first[function]
    except (KeyError, TypeError):
        pass
    try:
        parameters = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):  # a callable without an introspectable signature: Sample Factory 2's order
        parameters = []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name.lower() for p in parameters if p.kind in positional]
    found = len(names) >= 4 and "step" in names[2] and "writer" in names[3]
    try:
        _steps_first[function] = found
    except TypeError:  # unhashable callable: decided again next time
        pass
    return found
