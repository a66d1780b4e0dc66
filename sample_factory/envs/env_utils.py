"""The env registry, optional env interfaces and dependency checks.

Training code never imports an env directly: it asks the registry for the function registered under
``--env`` and calls it inside each rollout worker. Registrations live in the process-wide context
(:func:`sample_factory.envs.env_registry.global_env_registry`) so they travel to worker processes.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from sample_factory.envs.env_registry import global_env_registry
from sample_factory.utils.decorators import retrying
from sample_factory.utils.typing import CreateEnvFunc
from sample_factory.utils.utils import is_module_available, log

InterfaceT = TypeVar("InterfaceT")
ResultT = TypeVar("ResultT")


class EnvCriticalError(Exception):
    """Raised by an env when it cannot continue (e.g. a simulator crashed); the worker stops instead of retrying."""


class UnknownEnvError(ValueError):
    """``--env`` names nothing in the registry; the message lists what is registered and how to add more."""


class MissingDependencyError(ImportError):
    """An env family needs an optional package that is not installed; the message names the pip extra."""


def register_env(env_name: str, make_env_func: CreateEnvFunc) -> None:
    """Make ``env_name`` creatable by ``create_env``.

    ``make_env_func(full_env_name, cfg=None, env_config=None, render_mode=None)`` must return a Gymnasium-style env.
    Registering a name twice replaces the old entry (with a warning), so scripts that re-import their
    registration code stay idempotent.
    """
    if not callable(make_env_func):
        raise TypeError(
            f"register_env({env_name!r}, ...) needs a callable "
            f"make_env_func(full_env_name, cfg=None, env_config=None, render_mode=None), got {make_env_func!r}"
        )
    registry = global_env_registry()
    if env_name in registry:
        log.warning("Env %r is already registered, replacing its make_env_func with %r", env_name, make_env_func)
    registry[env_name] = make_env_func


def get_make_env_func(env_name: str) -> CreateEnvFunc:
    """Return the function registered under ``env_name`` or raise :class:`UnknownEnvError` saying how to fix it."""
    registry = global_env_registry()
    if env_name in registry:
        return registry[env_name]
    raise UnknownEnvError(unknown_env_message(env_name, sorted(registry)))


def unknown_env_message(env_name: str, registered: list[str]) -> str:
    """The text of :class:`UnknownEnvError`; shared with env families that validate names themselves."""
    names = ", ".join(registered) if registered else "(none)"
    return (
        f"Unknown env {env_name!r}. Registered envs: {names}. "
        f"To train on any Gymnasium id use `python -m sf_examples.train_gym_env --env=<GYMNASIUM_ID>`; "
        f"custom envs are added with `sample_factory.envs.env_utils.register_env(name, make_env_func)` "
        f"before training starts."
    )


def add_registration_func_arg(parser: argparse.ArgumentParser) -> None:
    """``--registration_func``: how a generic tool learns about envs it cannot know by name (outside the examples)."""
    parser.add_argument(
        "--registration_func",
        type=str,
        default=None,
        help="module:function called with no arguments before --env is created, for envs that neither Gymnasium nor "
        "the example families know; it registers the env (and any custom model), e.g. my_pkg.envs:register_envs.",
    )


def resolve_registration_func(spec: str) -> Callable[[], Any]:
    """The function named by ``--registration_func=module:function``; UnknownEnvError says what is wrong with it."""
    module_name, _, func_name = spec.rpartition(":")
    if not module_name or not func_name:
        raise UnknownEnvError(
            f"--registration_func={spec} must look like module:function, e.g. my_pkg.envs:register_envs"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownEnvError(
            f"--registration_func={spec}: cannot import module {module_name!r} ({exc}); fix the module path before "
            f"':' or install the package that provides it"
        ) from exc
    func = getattr(module, func_name, None)
    if not callable(func):
        raise UnknownEnvError(
            f"--registration_func={spec}: module {module_name!r} has no function {func_name!r}; fix the name after ':'"
        )
    return func


def register_with_func(spec: str, env_name: str) -> None:
    """Call ``--registration_func`` and check that it registered ``env_name``.

    Checking here makes a wrong function fail at once with a clear message, not later inside a worker process.
    """
    resolve_registration_func(spec)()
    if env_name not in global_env_registry():
        registered = ", ".join(sorted(global_env_registry())) or "(none)"
        raise UnknownEnvError(
            f"--registration_func={spec} did not register --env={env_name} (registered envs: {registered}); pass "
            f"the function that registers it or fix --env"
        )


def require_optional_module(module_name: str, extra: str, what: str) -> ModuleType:
    """Import ``module_name`` or fail with the ``pip install "sample-factory[extra]"`` command that provides it.

    Env families call this up front so a missing simulator is reported before any worker process starts.
    """
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{what} needs the Python package {module_name!r}, which is not installed ({exc}). "
            f'Install it with: pip install "sample-factory[{extra}]"'
        ) from exc


class RewardShapingInterface:
    """Envs whose reward terms can be re-weighted at runtime (e.g. by population-based training)."""

    def get_default_reward_shaping(self) -> dict[str, Any] | None:
        """The initial reward-shaping coefficients, or None when the env has nothing to shape."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_default_reward_shaping()")

    def set_reward_shaping(self, reward_shaping: dict[str, Any], agent_idx: int | slice) -> None:
        """Apply new coefficients to one agent (int) or several agents (slice) of the env."""
        raise NotImplementedError(f"{type(self).__name__} must implement set_reward_shaping()")


class TrainingInfoInterface:
    """Envs that adapt to training progress (curricula); the worker pushes e.g. approximate total env steps."""

    def __init__(self) -> None:
        self.training_info: dict[str, Any] = {}

    def set_training_info(self, training_info: dict[str, Any]) -> None:
        """Store the latest training progress; the env reads ``self.training_info`` when it needs it."""
        self.training_info = training_info


def find_wrapper_interface(env: Any, interface_type: type[InterfaceT]) -> InterfaceT | None:
    """Walk ``env -> env.env -> ...`` and return the first object implementing ``interface_type``, else None.

    Interfaces are usually implemented by the innermost env or by one wrapper, while the worker only
    holds the outermost wrapper.
    """
    current, seen = env, set()
    while current is not None and id(current) not in seen:
        if isinstance(current, interface_type):
            return current
        seen.add(id(current))
        current = getattr(current, "env", None)
    return None


def find_training_info_interface(env: Any) -> TrainingInfoInterface | None:
    """The first :class:`TrainingInfoInterface` in the wrapper chain of ``env``, or None."""
    return find_wrapper_interface(env, TrainingInfoInterface)


def get_default_reward_shaping(env: Any) -> dict[str, Any] | None:
    """The default reward-shaping scheme of the first :class:`RewardShapingInterface` in ``env``'s wrapper chain.

    None when no wrapper (nor the env itself) implements the interface, i.e. the env has nothing to shape.
    """
    shaping = find_wrapper_interface(env, RewardShapingInterface)
    return shaping.get_default_reward_shaping() if shaping is not None else None


def set_reward_shaping(env: Any, reward_shaping: dict[str, Any] | None, agent_idx: int | slice) -> bool:
    """Give ``reward_shaping`` to the first :class:`RewardShapingInterface` in ``env``'s wrapper chain.

    Returns whether one was found: an env with nothing to shape ignores the call, so population-based training can
    push schemes to every env without knowing which ones take them. ``agent_idx`` is one agent (int) or several
    (slice) of a multi-agent env.
    """
    shaping = find_wrapper_interface(env, RewardShapingInterface)
    if shaping is None:
        return False
    shaping.set_reward_shaping(reward_shaping, agent_idx)
    return True


def set_training_info(training_info_interface: TrainingInfoInterface | None, training_info: dict[str, Any]) -> None:
    """Pass training progress to an env's :class:`TrainingInfoInterface` (from ``find_training_info_interface``).

    ``None`` (the env has no such interface) is accepted and ignored, so callers need not check first.
    """
    if training_info_interface is not None:
        training_info_interface.set_training_info(training_info)


def retry(
    exception_class: type[BaseException] | tuple[type[BaseException], ...] = Exception,
    num_attempts: int = 3,
    sleep_time: float = 1.0,
) -> Callable[[Callable[..., ResultT]], Callable[..., ResultT]]:
    """Decorator: call the function again when it raises ``exception_class``, up to ``num_attempts`` calls in all.

    For env constructors that fail now and then for reasons outside the program (a simulator's port still taken, a
    licence server busy). ``sleep_time`` seconds pass between attempts; the last attempt's exception propagates.
    Other exceptions propagate at once.
    """
    if num_attempts < 1:
        raise ValueError(f"retry(num_attempts={num_attempts}) must allow at least one attempt")
    return retrying(exception_class, num_attempts, sleep_time)


def num_env_steps(infos: list[dict[str, Any]]) -> int:
    """Env frames represented by one step of an env whose agents returned ``infos`` (one info dict per agent).

    Each agent's info may say how many frames its step covered (``info["num_frames"]``, e.g. with frameskip done
    inside the env); an info without that key counts as one frame. Summed over agents, as frame counters of
    multi-agent envs count every agent's experience.
    """
    return sum(int(info.get("num_frames", 1)) for info in infos)


def vizdoom_available() -> bool:
    """True if the ``vizdoom`` package is installed; checked without importing it (the import loads the engine)."""
    return is_module_available("vizdoom")
