"""torch's private names, each behind a check of the torch versions it was verified on.

What each buys (measured; the inventory is in docs/architecture.md):

- ``foreach_norms`` / ``foreach_scale``: ``torch._foreach_norm`` / ``torch._foreach_mul_``, one kernel launch for every
  gradient instead of one per tensor (gradient clipping of a small MLP: 64 us against 113 us per SGD step);
- ``adam_init_group``: ``torch.optim.Adam._init_group`` makes the Adam moments the way ``Adam.step`` would, so the
  learner's lean Adam path needs no first ``step()`` (whose first call imports ``torch._dynamo``, about a second);
- ``optimizer_step_hooks``: the optimiser's and the global step hooks, which the lean path must not skip;
- ``fill_dynamo_disable_caches``: the cache ``torch._disable_dynamo`` keeps on a wrapped function, filled with the
  function itself while ``torch._dynamo`` is not loaded (about a second of a learner's start-up);
- ``is_compiled_module``, ``global_module_hooks``, ``module_hook_kinds``: ``nn.Module``'s ``_compiled_call_impl`` and
  hook dictionaries, read to decide whether a module may be called without ``nn.Module.__call__``;
- ``tensor_version``: ``Tensor._version``, the in-place write counter, to skip recomputing a statistic that has not
  changed.

On a torch outside ``VERIFIED_TORCH``, or with ``SF_DISABLE_FAST_PATHS=all``, every function answers the way that
keeps the public path: plain per-tensor loops, no lean Adam, hooks assumed present, modules assumed compiled,
versions unknown. One log line says so, once per process.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.modules import module as torch_module
from torch.optim import optimizer as torch_optimizer

from sample_factory.compat import disabled, log

VERIFIED_TORCH = ((2, 13),)  # (major, minor) of the torch releases these private names were verified on
_MODULE_HOOKS = {
    "_forward_hooks": "forward hook",
    "_forward_pre_hooks": "forward pre-hook",
    "_backward_hooks": "backward hook",
    "_backward_pre_hooks": "backward pre-hook",
}
_GLOBAL_HOOKS = tuple(f"_global{name}" for name in _MODULE_HOOKS)
# the arguments of torch.optim.Adam._init_group after self (torch 2.13)
_ADAM_INIT_GROUP_PARAMETERS = [
    "group", "params_with_grad", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "state_steps",
]  # fmt: skip
# the attribute torch._disable_dynamo caches its wrapper in, on the function it wraps
_DYNAMO_DISABLE_CACHE = "__dynamo_disable"
# module_hook_kinds' answer where hooks cannot be read
HOOKS_UNREADABLE = "its hooks cannot be read (torch's private paths are off)"
_allowed: bool | None = None  # decided on first use, once per process (hot paths ask on every step)


def torch_version() -> tuple[int, int]:
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def private_paths_allowed() -> bool:
    """torch is a verified version and the private paths are not switched off (decided once per process; a 'no'
    is logged then)."""
    global _allowed
    if _allowed is None:
        _allowed = _decide()
    return _allowed


def recheck() -> bool:
    """Decide again (after ``SF_DISABLE_FAST_PATHS`` or ``VERIFIED_TORCH`` changed, e.g. in a test)."""
    global _allowed
    _allowed = None
    return private_paths_allowed()


def _decide() -> bool:
    why = disabled("torch_internals")
    if why is None and torch_version() not in VERIFIED_TORCH:
        verified = ", ".join(f"{a}.{b}" for a, b in VERIFIED_TORCH)
        why = f"torch {torch.__version__} is not a version they were verified on ({verified})"
    if why is None:
        return True
    log.info("torch's private paths are off (%s): public torch APIs only", why)
    return False


def foreach_norms(tensors: list[Tensor]) -> list[Tensor]:
    """The 2-norm of each tensor."""
    if private_paths_allowed():
        return list(torch._foreach_norm(tensors))
    return [torch.linalg.vector_norm(t) for t in tensors]


def foreach_scale(tensors: list[Tensor], factor: Tensor) -> None:
    """Multiply every tensor in place by ``factor`` (a 0-dim tensor)."""
    if private_paths_allowed():
        torch._foreach_mul_(tensors, factor)
        return
    for tensor in tensors:
        tensor.mul_(factor)


def adam_init_group(optimizer: torch.optim.Optimizer, group: dict) -> bool:
    """Create the missing Adam moments and step counters of ``group`` with torch's own ``Adam._init_group``; False
    (nothing done) where that method is missing, takes other arguments, or is not to be used."""
    if not private_paths_allowed():
        return False
    init_group = getattr(optimizer, "_init_group", None)
    if init_group is None:
        return False
    import inspect

    try:
        signature = inspect.signature(init_group)
    except (TypeError, ValueError):
        return False
    if list(signature.parameters) != _ADAM_INIT_GROUP_PARAMETERS:
        return False
    with torch.no_grad():
        init_group(group, [], [], [], [], [], [])
    return True


def optimizer_step_hooks(optimizer: torch.optim.Optimizer) -> bool:
    """Hooks that ``optimizer.step()`` would call (its own and the global ones); True where that cannot be read."""
    if not private_paths_allowed():
        return True
    return bool(
        getattr(optimizer, "_optimizer_step_pre_hooks", True)
        or getattr(optimizer, "_optimizer_step_post_hooks", True)
        or getattr(torch_optimizer, "_global_optimizer_pre_hooks", True)
        or getattr(torch_optimizer, "_global_optimizer_post_hooks", True)
    )


def fill_dynamo_disable_caches(classes: list[type]) -> bool:
    """Fill ``torch._disable_dynamo``'s wrapper cache of every wrapped method of ``classes`` with the method itself,
    so calling it imports nothing; True if any was filled. Only while ``torch._dynamo`` is not loaded (then no code of
    this process is being compiled, and the wrapper has nothing to do)."""
    import sys

    if "torch._dynamo" in sys.modules or not private_paths_allowed():
        return False
    disable = getattr(torch, "_disable_dynamo", None)
    if disable is None:
        return False
    wrapper_code = disable(lambda: None).__code__
    filled = False
    for cls in classes:
        for attribute in vars(cls).values():
            wrapped = getattr(attribute, "__wrapped__", None)
            if getattr(attribute, "__code__", None) is wrapper_code and callable(wrapped):
                setattr(wrapped, _DYNAMO_DISABLE_CACHE, wrapped)
                filled = True
    return filled


def is_compiled_module(module: nn.Module) -> bool:
    """``module`` was ``torch.compile``'d in place (its calls go to compiled code); True where that cannot be read."""
    if not private_paths_allowed():
        return True
    return getattr(module, "_compiled_call_impl", None) is not None


def global_module_hooks() -> bool:
    """A hook is registered for every module (``register_module_*_hook``); True where that cannot be read."""
    if not private_paths_allowed():
        return True
    return any(getattr(torch_module, name, None) for name in _GLOBAL_HOOKS)


def module_hook_kinds(module: nn.Module) -> list[str]:
    """The kinds of hooks registered on ``module`` itself (e.g. ``forward pre-hook``); where that cannot be read,
    ``[HOOKS_UNREADABLE]`` (so the module is treated as having one)."""
    if not private_paths_allowed():
        return [HOOKS_UNREADABLE]
    return [kind for name, kind in _MODULE_HOOKS.items() if getattr(module, name, None)]


def tensor_version(tensor: Tensor) -> int | None:
    """The in-place write counter of ``tensor``; None where it is not to be read (then assume it changed)."""
    if not private_paths_allowed():
        return None
    return tensor._version
