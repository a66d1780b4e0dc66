"""Where a fast path may touch the model: the library's own modules, or user modules that pass a start-up check.

A fast path is a speed trick applied to the model's modules or parameters (see ``docs/learner.md``): channels-last
weights and images in the learner, direct module calls and inference mode in the inference worker, flat Adam and the
fused PPO loss in the learner. Each was proven on the library's modules (classes defined in ``sample_factory`` or
``torch.nn``, without hooks or per-instance ``forward``); a user's module can break any of them (``x.view(...)``
on a channels-last tensor, a ``__call__`` override that direct calls bypass). So where the model holds user modules,
the trick is tried once at start-up on a deep copy of the model, with a small dummy batch of the real observation
space, and used only if it runs and gives the same outputs (the learner's tricks: and gradients) as the plain path,
to :data:`RELATIVE_TOLERANCE`. Either way one log line says what was decided and why; nothing is added to the hot
loops (flat Adam's gradient watch for user models aside, see ``optimizers.FlatAdam``).

Two environment variables are debugging and testing switches, each a comma-separated list of fast path names (or
``all``): ``SF_FORCE_FAST_PATHS`` applies a trick without its check (to show what the check protects against),
``SF_DISABLE_FAST_PATHS`` never applies it.
"""

from __future__ import annotations

import copy
import os
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from sample_factory.compat import MODULES as COMPAT_MODULES
from sample_factory.compat.torch_internals import global_module_hooks, module_hook_kinds
from sample_factory.model.encoder import ACTION_MASK_KEY, as_dict_space
from sample_factory.utils.torch_utils import as_channels_last
from sample_factory.utils.utils import log

CHANNELS_LAST, DIRECT_CALLS, INFERENCE_MODE, FLAT_ADAM, FUSED_LOSS, GRU_BPTT = (
    "channels_last",
    "direct_calls",
    "inference_mode",
    "flat_adam",
    "fused_loss",
    "gru_bptt",
)
LABELS = {
    CHANNELS_LAST: "channels-last",
    DIRECT_CALLS: "direct calls",
    INFERENCE_MODE: "inference mode",
    FLAT_ADAM: "flat Adam",
    FUSED_LOSS: "fused PPO loss",
    GRU_BPTT: "GRU BPTT kernel",
}
FORCE_ENV, DISABLE_ENV = "SF_FORCE_FAST_PATHS", "SF_DISABLE_FAST_PATHS"

CHECK_BATCH_SIZE = 4
CHECK_SEED = 12345
# Layout changes and regrouped sums move float32 results by ~1e-7 of their scale; a broken module moves them by O(1).
RELATIVE_TOLERANCE = 1e-4
_LIBRARY_PACKAGES = ("sample_factory.", "torch.nn.")
# modules of the example families' own models, which the tests run through every check (so the checks themselves,
# about half a second of a Doom run's start-up, are not repeated at each start): tests/model/test_family_models.py
FAMILY_MODEL_MODULES = frozenset({"sf_examples.vizdoom.doom.doom_model"})

Outputs = dict[str, Tensor | None]


# ---- switches ---------------------------------------------------------------------------------------------------


def switched(env_name: str) -> frozenset[str]:
    """The fast paths named in ``env_name`` (``FORCE_ENV`` or ``DISABLE_ENV``); a clear error for an unknown name."""
    raw = os.environ.get(env_name, "")
    names = {name.strip() for name in raw.split(",") if name.strip()}
    if "all" in names:
        return frozenset(LABELS)
    compat = set(COMPAT_MODULES) if env_name == DISABLE_ENV else set()  # sample_factory.compat's own switches
    unknown = names - set(LABELS) - compat
    if unknown:
        extra = f", {', '.join(COMPAT_MODULES)}" if compat else ""
        raise ValueError(
            f"{env_name}={raw!r} names unknown fast paths {sorted(unknown)}: use a comma-separated list of "
            f"{', '.join(LABELS)}{extra}, or all"
        )
    return frozenset(names - compat)


# ---- whose code is it -------------------------------------------------------------------------------------------


def global_hooks() -> bool:
    """Whether a module hook is registered for every module (``torch.nn.modules.module.register_module_*_hook``)."""
    return global_module_hooks()


def module_hooks(module: nn.Module) -> list[str]:
    """The kinds of hooks registered on ``module`` itself (e.g. ``forward pre-hook``)."""
    return module_hook_kinds(module)


def is_library_module(module: nn.Module) -> bool:
    """A module whose code is the library's: its class comes from ``sample_factory``, ``torch.nn`` or an example
    family's model (``FAMILY_MODEL_MODULES``), its instance has no ``forward`` of its own and no hook runs user
    code around it."""
    origin = type(module).__module__
    return (
        (origin.startswith(_LIBRARY_PACKAGES) or origin in FAMILY_MODEL_MODULES)
        and "forward" not in vars(module)
        and not module_hooks(module)
        and not global_hooks()
    )


def user_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The outermost modules of ``model`` that are not the library's, with their paths (``""`` for the model)."""
    found: list[tuple[str, nn.Module]] = []

    def visit(path: str, module: nn.Module) -> None:
        if not is_library_module(module):
            found.append((path, module))
            return
        for name, child in module.named_children():
            visit(f"{path}.{name}" if path else name, child)

    visit("", model)
    return found


def describe(modules: list[tuple[str, nn.Module]]) -> str:
    """``encoder MyConvEncoder, decoder MyDecoder``: where each module sits in the actor-critic, and its class."""
    return ", ".join(f"{path or 'actor-critic'} {type(module).__name__}" for path, module in modules)


# ---- the dummy batch and the passes the checks compare ----------------------------------------------------------


@dataclass
class DummyBatch:
    """A few samples of the real observation space, RNN states and (filled by the first pass) actions."""

    obs: dict[str, Tensor]
    rnn_states: Tensor
    action_mask: Tensor | None
    actions: Tensor | None = None


def dummy_batch(obs_space: gym.Space, rnn_size: int, device: torch.device, seed: int = CHECK_SEED) -> DummyBatch:
    """``CHECK_BATCH_SIZE`` observations sampled from ``obs_space`` (its own dtypes), every action allowed."""
    space = copy.deepcopy(as_dict_space(obs_space))
    space.seed(seed)
    samples = [space.sample() for _ in range(CHECK_BATCH_SIZE)]
    obs = {key: torch.as_tensor(np.stack([s[key] for s in samples])).to(device) for key in space.spaces}
    if ACTION_MASK_KEY in obs:
        obs[ACTION_MASK_KEY] = torch.ones_like(obs[ACTION_MASK_KEY])
    generator = torch.Generator().manual_seed(seed)
    rnn_states = (torch.rand(CHECK_BATCH_SIZE, rnn_size, generator=generator) - 0.5).to(device)
    return DummyBatch(obs, rnn_states, obs.get(ACTION_MASK_KEY))


def learner_outputs(model: nn.Module, batch: DummyBatch, nhwc_obs: bool = False, values_only: bool = False) -> Outputs:
    """What the learner computes on a minibatch: values, action logits, log-probs of ``batch.actions`` (sampled
    here and stored in the batch on the first call) and new RNN states. ``nhwc_obs``: images channels-last."""
    normalized = model.normalize_obs(batch.obs)
    if nhwc_obs:
        normalized = {key: as_channels_last(x) for key, x in normalized.items()}
    head = model.forward_head(normalized)
    core, new_rnn_states = model.forward_core(head, batch.rnn_states)
    tail = model.forward_tail(core, values_only=values_only, sample_actions=False, action_mask=batch.action_mask)
    if values_only:
        return {"values": tail["values"]}
    distribution = model.action_distribution()
    if batch.actions is None:
        batch.actions = distribution.sample().detach()
    log_probs = distribution.log_prob(batch.actions)
    return dict(
        values=tail["values"], action_logits=tail["action_logits"], log_probs=log_probs, new_rnn_states=new_rnn_states
    )


def inference_outputs(model: nn.Module, batch: DummyBatch, grad_mode: Callable, seed: int) -> Outputs:
    """What the inference worker computes on a request batch (actions sampled with ``seed``) under ``grad_mode``."""
    with grad_mode():
        torch.manual_seed(seed)
        out = model(model.normalize_obs(batch.obs), batch.rnn_states, action_mask=batch.action_mask)
        return {key: out[key] for key in out.keys()}


def weighted_sum(outputs: Outputs) -> Tensor | None:
    """A scalar that depends on every differentiable output, through fixed random weights (None if there is none)."""
    generator = torch.Generator().manual_seed(CHECK_SEED)
    total = None
    for value in outputs.values():
        if value is not None and value.requires_grad:
            term = (value * torch.rand(value.shape, generator=generator).to(value)).sum()
            total = term if total is None else total + term
    return total


def output_gradients(model: nn.Module, outputs: Outputs) -> Outputs:
    """Gradients of every parameter of ``model`` for :func:`weighted_sum` of ``outputs``."""
    total = weighted_sum(outputs)
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    if total is None or not named:
        return {}
    grads = torch.autograd.grad(total, [p for _, p in named], allow_unused=True)
    return {f"gradient of {name}": grad for (name, _), grad in zip(named, grads, strict=True)}


def with_gradients(model: nn.Module, outputs: Outputs) -> Outputs:
    """``outputs`` and the gradients of :func:`output_gradients`."""
    return {**outputs, **output_gradients(model, outputs)}


# ---- comparing ------------------------------------------------------------------------------------------------------


def difference(expected: Outputs, got: Outputs) -> str | None:
    """None when ``got`` matches ``expected`` key by key (floats to ``RELATIVE_TOLERANCE`` of each tensor's scale,
    at least 1e-3 of the largest value compared), else what differs first."""
    if set(expected) != set(got):
        return f"it returns {sorted(got)} instead of {sorted(expected)}"
    present = [
        x.detach().abs().max() for x in expected.values() if x is not None and x.numel() and x.is_floating_point()
    ]
    scale = float(torch.stack([p.float() for p in present]).nan_to_num().max()) if present else 0.0
    for key, a in expected.items():
        problem = _tensor_difference(key, a, got[key], scale)
        if problem is not None:
            return problem
    return None


def _tensor_difference(key: str, a: Tensor | None, b: Tensor | None, scale: float) -> str | None:
    if a is None or b is None:
        return None if a is b else f"{key} is {'missing' if b is None else 'extra'}"
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{key} is {b.dtype} {tuple(b.shape)} instead of {a.dtype} {tuple(a.shape)}"
    a, b = a.detach(), b.detach()
    if not a.is_floating_point():
        return None if torch.equal(a, b) else f"{key} differs"
    same_nan = torch.equal(a.isnan(), b.isnan())
    error = (a - b).nan_to_num(nan=0.0).abs().max() if a.numel() else torch.zeros(())
    norm = max(float(a.abs().nan_to_num().max()) if a.numel() else 0.0, 1e-3 * scale, 1e-12)
    relative = float(error) / norm
    if not same_nan or not relative <= RELATIVE_TOLERANCE:
        return f"{key} differs by {relative:.1e} of its scale (tolerance {RELATIVE_TOLERANCE:.0e})"
    return None


# ---- running a check --------------------------------------------------------------------------------------------


@dataclass
class Verdict:
    """Why a trick cannot be used on this model, and the user module to blame when it is known."""

    reason: str
    culprit: tuple[str, nn.Module] | None = None


class CheckFailed(Exception):
    """A variant of the model failed or differed: carries its ``Verdict``."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


@contextmanager
def isolated_rng(device: torch.device) -> Iterator[None]:
    """The check's random draws (dropout, sampled actions) leave the process's torch generators as they were, so a
    seeded run draws the same numbers with or without the check."""
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        yield


def run_variant(what: str, call: Callable[[], Outputs], model: nn.Module) -> Outputs:
    """``call()`` with the RNG seeded (every variant draws the same numbers); an exception becomes a ``CheckFailed``
    saying ``what`` failed, naming the innermost user module of the traceback."""
    torch.manual_seed(CHECK_SEED)
    try:
        return call()
    except CheckFailed:
        raise
    except Exception as exc:  # noqa: BLE001  (any failure of user code means: do not use the trick)
        raise CheckFailed(Verdict(f"{what} ({exception_line(exc)})", _culprit(exc, model))) from exc


def compare(what: str, expected: Outputs, got: Outputs) -> None:
    """Raise ``CheckFailed`` if ``got`` differs from ``expected``; ``what`` names the variant."""
    problem = difference(expected, got)
    if problem is not None:
        raise CheckFailed(Verdict(f"{what}: {problem}"))


def exception_line(exc: BaseException, limit: int = 160) -> str:
    """``RuntimeError: first line of the message`` cut to ``limit`` characters."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _culprit(exc: BaseException, model: nn.Module) -> tuple[str, nn.Module] | None:
    """The innermost user module whose code is on the traceback of ``exc``, with its path in ``model``."""
    modules = {id(module): (path, module) for path, module in model.named_modules() if not is_library_module(module)}
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        found = modules.get(id(frame.f_locals.get("self")))
        if found is not None:
            return found
    return None


# ---- deciding -----------------------------------------------------------------------------------------------------


def decide(who: str, trick: str, model: nn.Module, check: Callable[[], None], device: torch.device) -> bool:
    """Whether ``who`` (``Learner``, ``Inference worker``) uses ``trick`` on ``model``; logs one line either way.

    The library's own modules need no check; otherwise ``check()`` (raising ``CheckFailed``) runs once on copies.
    """
    label = LABELS[trick]
    if trick in switched(DISABLE_ENV):
        log.info("%s: %s skipped: switched off by %s", who, label, DISABLE_ENV)
        return False
    if trick in switched(FORCE_ENV):
        log.warning("%s: %s forced on by %s, without its start-up check", who, label, FORCE_ENV)
        return True
    users = user_modules(model)
    if not users:
        log.info("%s: %s used (every module of the model is the library's own)", who, label)
        return True
    verdict = run_check(check, device)
    if verdict is None:
        log.info("%s: %s used for %s: it passed the start-up check", who, label, describe(users))
        return True
    blamed = describe([verdict.culprit]) if verdict.culprit is not None else describe(users)
    log.info("%s: %s skipped for %s: %s", who, label, blamed, verdict.reason)
    return False


def run_check(check: Callable[[], None], device: torch.device) -> Verdict | None:
    """``check()``'s verdict (None: passed), with the process's RNG untouched and no gradient left anywhere."""
    with isolated_rng(device):
        try:
            check()
        except CheckFailed as failed:
            return failed.verdict
        except Exception as exc:  # noqa: BLE001  (copying the model or building the batch failed: stay plain)
            return Verdict(f"the start-up check could not run ({exception_line(exc)})")
    return None


def copies(model: nn.Module, count: int) -> list[nn.Module]:
    """``count`` deep copies of ``model`` (the checks never touch the live model), see :func:`faithful_copy`."""
    try:
        return [faithful_copy(model) for _ in range(count)]
    except Exception as exc:  # noqa: BLE001
        raise CheckFailed(Verdict(f"the model cannot be deep-copied for the check ({exception_line(exc)})")) from exc


def faithful_copy(model: nn.Module) -> nn.Module:
    """A deep copy in which other tensors that share a parameter's memory (``self.w = self.fc.weight.data``) still
    share the copied parameter's: ``copy.deepcopy`` clones each parameter on its own, which would hide from the
    checks what a trick that moves parameters (flat Adam) does to such a module."""
    memo: dict = {}
    keep_alive = []  # memo is keyed by id(): the temporary .data tensors must outlive the copy
    for param in model.parameters():
        if type(param) is nn.Parameter:
            data = param.data
            keep_alive.append(data)
            memo[id(param)] = nn.Parameter(data.__deepcopy__(memo), requires_grad=param.requires_grad)
    return copy.deepcopy(model, memo)
