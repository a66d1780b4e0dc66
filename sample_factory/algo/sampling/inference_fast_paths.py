"""The inference worker's fast paths: inference mode and direct module calls, where they are proven safe.

- **Inference mode** (``torch.inference_mode`` instead of ``torch.no_grad`` around the policy pass: no version
  counters or view tracking, 6-12 % of a CartPole pass). A module that runs autograd inside its forward
  (``torch.enable_grad()``), or keeps tensors made in one pass for use outside inference mode, breaks under it.
- **Direct calls** (``model.direct_calls``): ``module(...)`` runs ``forward`` without ``nn.Module.__call__``. A module
  with hooks or its own ``__call__`` keeps the normal call.

The library's modules use both; a model holding user modules uses each only after a start-up comparison against
the plain path on a dummy batch (``model.fast_path_checks``): two passes (actions sampled with fixed seeds), then a
weight reload as the worker does, then a third pass.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import gymnasium as gym
import torch
from torch import nn

from sample_factory.model.direct_calls import blocked_modules, call_forward_directly
from sample_factory.model.fast_path_checks import (
    DIRECT_CALLS,
    DISABLE_ENV,
    FORCE_ENV,
    INFERENCE_MODE,
    LABELS,
    DummyBatch,
    compare,
    copies,
    decide,
    describe,
    dummy_batch,
    global_hooks,
    inference_outputs,
    run_check,
    run_variant,
    switched,
    user_modules,
)
from sample_factory.utils.utils import log

WHO = "Inference worker"


def inference_fast_paths(model: nn.Module, obs_space: gym.Space, rnn_size: int, device: torch.device) -> Callable:
    """Apply direct calls to ``model`` where they hold, and return the grad mode of its passes: ``torch.inference_mode``
    or, where that fails the check, ``torch.no_grad``. Call once, on the worker's model in eval mode on its device."""
    batch = functools.cache(lambda: dummy_batch(obs_space, rnn_size, device))
    use_inference_mode = decide(
        WHO, INFERENCE_MODE, model, lambda: check_passes(model, batch(), torch.inference_mode, ()), device
    )
    grad_mode = torch.inference_mode if use_inference_mode else torch.no_grad
    apply_direct_calls(model, batch, grad_mode, device)
    return grad_mode


def apply_direct_calls(model: nn.Module, batch: Callable[[], DummyBatch], grad_mode: Callable, device) -> None:
    """Direct calls for every module where they hold (library modules; user modules after the check); one log line."""
    label = LABELS[DIRECT_CALLS]
    if DIRECT_CALLS in switched(DISABLE_ENV):
        log.info("%s: %s skipped: switched off by %s", WHO, label, DISABLE_ENV)
        return
    if DIRECT_CALLS in switched(FORCE_ENV):
        call_forward_directly(model, force=True)
        log.warning("%s: %s forced on by %s, hooks and __call__ overrides bypassed", WHO, label, FORCE_ENV)
        return
    if global_hooks():
        log.info("%s: %s skipped: a global module hook is registered, it must see every call", WHO, label)
        return
    blocked = blocked_modules(model)
    users = user_modules(model)
    if users:
        paths = [path for path, _, _ in blocked]
        verdict = run_check(lambda: check_passes(model, batch(), grad_mode, paths, direct=True), device)
        if verdict is not None:
            blamed = describe([verdict.culprit] if verdict.culprit is not None else users)
            log.info("%s: %s skipped for %s: %s", WHO, label, blamed, verdict.reason)
            return
    call_forward_directly(model)
    if blocked:
        kept = "; ".join(f"{describe([(path, module)])}: {reason}" for path, module, reason in blocked)
        log.info("%s: %s skipped for %s (the other modules call forward directly)", WHO, label, kept)
    elif users:
        log.info("%s: %s used for %s: it passed the start-up check", WHO, label, describe(users))
    else:
        log.info("%s: %s used (every module of the model is the library's own)", WHO, label)


def check_passes(model: nn.Module, batch: DummyBatch, grad_mode: Callable, blocked_paths, direct: bool = False) -> None:
    """Compare the worker's passes on a copy with the fast path (``grad_mode``, and ``direct`` calls except for
    ``blocked_paths``) against a plain copy under ``torch.no_grad``; raises ``CheckFailed``."""
    plain, fast = copies(model, 2)
    if direct:
        leave = [module for path, module in fast.named_modules() if path in set(blocked_paths)]
        call_forward_directly(fast, leave=leave)
    how = "with direct calls" if direct else "under torch.inference_mode"
    for seed in (1, 2, 3):
        if seed == 3:  # the worker reloads the learner's weights between passes, inside its grad mode
            _reload(plain, model, torch.no_grad)
            _reload(fast, model, grad_mode)
        plain_pass = functools.partial(inference_outputs, plain, batch, torch.no_grad, seed)
        expected = run_variant("its plain forward fails on a dummy batch", plain_pass, plain)
        fast_pass = functools.partial(inference_outputs, fast, batch, grad_mode, seed)
        got = run_variant(f"its forward fails {how}", fast_pass, fast)
        compare(f"{how}, pass {seed}", expected, got)


def _reload(target: nn.Module, source: nn.Module, grad_mode: Callable) -> None:
    with grad_mode():
        target.load_state_dict(source.state_dict())
