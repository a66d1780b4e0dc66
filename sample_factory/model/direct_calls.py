"""Calling a model's modules without ``nn.Module.__call__``'s hook machinery, for the inference worker's private copy.

Every ``module(x)`` goes through ``nn.Module.__call__``, which looks for forward and backward hooks (global and per
module) before it reaches ``forward``: a few microseconds each time. The inference worker's pass over a small MLP
policy calls about 16 modules to compute a few hundred microseconds of arithmetic, so on CartPole this is ~10 % of
the pass (measured: 223 -> 202 us per pass of 9 observations). Its model is private to the worker, so
:func:`call_forward_directly` gives each module a subclass whose ``__call__`` is its ``forward``.

A module whose ``module(...)`` does more than ``forward`` keeps its class (:func:`direct_call_blocker`: hooks, a
``__call__`` of its own, a per-instance ``forward``); with a global module hook nothing changes. The change is to
classes only: parameters, buffers, ``state_dict`` keys and ``isinstance`` answers stay the same. Where the model holds
user modules, the inference worker also compares outputs once at start-up (``inference_fast_paths``).
"""

from __future__ import annotations

from collections.abc import Collection

from torch import nn

from sample_factory.compat.torch_internals import HOOKS_UNREADABLE, is_compiled_module
from sample_factory.model.fast_path_checks import global_hooks, module_hooks

_DIRECT_CLASSES: dict[type, type] = {}


def has_hooks(model: nn.Module) -> bool:
    """Whether any forward or backward hook, global or on a submodule of ``model``, is registered."""
    return global_hooks() or any(module_hooks(m) for m in model.modules())


def direct_call_blocker(module: nn.Module) -> str | None:
    """Why ``module(...)`` must keep going through ``nn.Module.__call__`` (None: calling ``forward`` is the same)."""
    cls = type(module)
    if "forward" in vars(module) or "__call__" in vars(module):
        return "it has a forward or __call__ of its own instance"
    if cls.__call__ is not nn.Module.__call__ and cls not in _DIRECT_CLASSES.values():
        return f"{cls.__name__} overrides __call__"
    hooks = module_hooks(module)
    if hooks:
        return hooks[0] if hooks[0] == HOOKS_UNREADABLE else f"it has a {hooks[0]}"
    return None


def blocked_modules(model: nn.Module) -> list[tuple[str, nn.Module, str]]:
    """``(path, module, reason)`` of every module of ``model`` that :func:`call_forward_directly` leaves alone."""
    found = []
    for path, module in model.named_modules():
        reason = direct_call_blocker(module)
        if reason is not None:
            found.append((path, module, reason))
    return found


def call_forward_directly(model: nn.Module, force: bool = False, leave: Collection[nn.Module] = ()) -> bool:
    """Make ``module(...)`` call ``module.forward(...)`` directly for the submodules of ``model`` where that is the
    same (see :func:`direct_call_blocker`) and that are not in ``leave``; False (nothing changed) with a global hook.

    ``force`` converts every module, blockers and global hooks notwithstanding (a testing switch: it shows what
    the blockers protect). Hooks registered afterwards would not run: use on private copies.
    """
    if global_hooks() and not force:
        return False
    left = {id(module) for module in leave}
    for module in model.modules():
        if id(module) in left or (not force and direct_call_blocker(module) is not None):
            continue
        if is_compiled_module(module):
            continue  # torch.compile'd: its call goes to the compiled code
        cls = type(module)
        if cls.forward is nn.Module.forward or cls in _DIRECT_CLASSES.values():
            continue  # containers without a forward (ModuleDict, ModuleList), or already direct
        module.__class__ = _direct_class(cls)
    return True


def original_class(module: nn.Module) -> type:
    """The class ``module`` had before :func:`call_forward_directly` (its own class when it was not converted)."""
    cls = type(module)
    return cls.__mro__[1] if cls in _DIRECT_CLASSES.values() else cls


def _direct_class(cls: type) -> type:
    direct = _DIRECT_CLASSES.get(cls)
    if direct is None:
        direct = type(cls.__name__, (cls,), {"__call__": cls.forward, "__module__": cls.__module__})
        direct.__qualname__ = cls.__qualname__
        _DIRECT_CLASSES[cls] = direct
    return direct
