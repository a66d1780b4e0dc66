"""The learner's optimiser steps: ``--optimizer`` (Adam, or LAMB from ``algo.utils.optimizers``) and the lean paths of
an Adam step."""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable

import torch
from torch import Tensor
from torch.optim.adam import adam as adam_functional

from sample_factory.algo.utils.optimizers import Lamb
from sample_factory.compat.torch_internals import (
    adam_init_group,
    fill_dynamo_disable_caches,
    foreach_norms,
    foreach_scale,
    optimizer_step_hooks,
)
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import log


def clip_grad_norm(grads: list[Tensor], max_norm: float) -> Tensor:
    """Total 2-norm of ``grads``, which are scaled in place to ``max_norm`` when above it; no clipping at ``inf``.

    The arithmetic of ``torch.nn.utils.clip_grad_norm_`` (per-tensor norms, the norm of those, one factor
    ``max_norm / (norm + 1e-6)`` capped at 1) for gradients that share one device and dtype, without its grouping by
    device and dtype on every call: on a small MLP that bookkeeping cost more than the arithmetic (113 us against
    64 us per SGD step of the Gymnasium family's CartPole network, one CPU thread).
    """
    if not grads:
        return torch.zeros(())
    total_norm = torch.linalg.vector_norm(torch.stack(foreach_norms(grads)))
    if max_norm != float("inf"):
        foreach_scale(grads, torch.clamp(max_norm / (total_norm + 1e-6), max=1.0))
    return total_norm


class LeanAdamStep:
    """``optimizer.step()`` of a fused ``torch.optim.Adam`` through its functional form, skipping the per-call
    wrappers (profiling hooks, graph-capture checks, state initialisation walk) once the moments exist.

    On the CartPole MLP these wrappers took 95 us of each SGD step, the update itself under 60 us. The call is the
    one ``Adam.step`` makes, with the same tensors and hyper-parameters read from the param group on every step (so
    learning-rate schedules and PBT changes apply), hence bit-identical results. Anything unusual goes the normal
    way: another optimiser class, several param groups, step hooks, amsgrad.

    Moments that do not exist yet (the first step, or a parameter that got its first gradient late) are created by
    torch's own lazy initialisation, ``Adam._init_group``, the code ``Adam.step`` runs for them. The first call of
    ``Adam.step`` itself imports ``torch._dynamo`` (about a second of CPU, in the learner's first training step
    while the rest of the run waits for it); a torch whose ``_init_group`` takes other arguments gets that call.
    """

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer
        group = optimizer.param_groups[0]
        self.enabled = (
            type(optimizer) is torch.optim.Adam
            and len(optimizer.param_groups) == 1
            and bool(group.get("fused"))
            and not any(group.get(option, False) for option in ("amsgrad", "maximize", "differentiable", "capturable"))
        )

    def __call__(self) -> None:
        if not self._lean_step():
            self.optimizer.step()

    def _lean_step(self) -> bool:
        optimizer = self.optimizer
        if not self.enabled or _has_step_hooks(optimizer):
            return False
        group = optimizer.param_groups[0]
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return False
        states = [optimizer.state.get(p) for p in params]
        if any(not state for state in states):
            if not self._create_moments(group):
                return False  # the normal step creates them
            states = [optimizer.state[p] for p in params]
        _fused_adam_update(
            group,
            params,
            [p.grad for p in params],
            [state["exp_avg"] for state in states],
            [state["exp_avg_sq"] for state in states],
            [state["step"] for state in states],
        )
        return True

    def _create_moments(self, group: dict) -> bool:
        """The missing moments and step counters of ``group``'s parameters with gradients, made by torch's own
        ``Adam._init_group`` (``compat.torch_internals``); False where that is not available."""
        return adam_init_group(self.optimizer, group)


def _fused_adam_update(
    group: dict,
    params: list[Tensor],
    grads: list[Tensor],
    avgs: list[Tensor],
    avg_sqs: list[Tensor],
    steps: list[Tensor],
) -> None:
    """The call ``Adam.step`` makes for a fused, non-amsgrad group, with its hyper-parameters read from ``group``."""
    beta1, beta2 = group["betas"]
    adam_functional(
        params,
        grads,
        avgs,
        avg_sqs,
        [],
        steps,
        fused=True,
        amsgrad=False,
        beta1=beta1,
        beta2=beta2,
        lr=group["lr"],
        weight_decay=group["weight_decay"],
        eps=group["eps"],
        maximize=False,
        decoupled_weight_decay=group.get("decoupled_weight_decay", False),
    )


def _has_step_hooks(optimizer: torch.optim.Optimizer) -> bool:
    """Hooks that ``optimizer.step()`` would call: the optimiser's own and the global ones."""
    return optimizer_step_hooks(optimizer)


class FlatAdam:
    """The weights, gradients and Adam moments of a fused ``torch.optim.Adam`` as views of one flat tensor each, so
    gradient clipping and the update are a few kernels over every weight at once instead of a few per tensor.

    On the CartPole MLP (10 tensors) the per-tensor bookkeeping, not the arithmetic, dominated the optimiser's share of
    an SGD step: per-tensor norms, stacking them, grouping tensors by device for the fused kernel, one step counter per
    tensor. Over flat tensors a 16-step training call took 16.6 instead of 17.4 ms (8 alternating blocks).

    - The parameters become views of ``flat_param`` (``param.data`` is re-pointed: the ``Parameter`` objects, and so
      the optimiser's references, stay the same; ``load_state_dict`` copies into the views).
    - Gradients are views of ``flat_grad``, zeroed before each backward pass (autograd then adds into them in place).
      So a parameter that got no gradient in some step would be updated with a zero gradient there, as with
      ``zero_grad(set_to_none=False)``, where torch's Adam skips it. The library's models give every parameter a
      gradient in every step; for other models ``watch_gradients`` records, with a hook per parameter, which ones got
      one, and the first step where one did not leaves flat mode for good (the per-tensor path then skips them).
    - The moments are adopted after the optimiser created them (its first step runs the normal way), and again after
      every ``optimizer.load_state_dict`` (a checkpoint, a PBT donor), which replaces the state: the values are copied
      into ``exp_avg`` / ``exp_avg_sq`` and each parameter's state points at its views and one shared step counter, so
      ``optimizer.state_dict()`` keeps its per-parameter form.

    ``enabled`` is False, and the caller uses the per-tensor path, for anything else: another optimiser, several
    groups, amsgrad and the like, tensors on several devices or dtypes, non-contiguous (channels-last) weights.
    If the parameters stop being views (the model was moved or reloaded into new tensors), flat mode switches off.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, watch_gradients: bool = False, spare: int = 0) -> None:
        """``spare``: elements after the gradients in ``grad_buffer`` (zeroed with them) for a caller's own numbers
        that travel with the gradients, such as the per-parameter counts of a distributed step."""
        self.optimizer = optimizer
        params: list[Tensor] = list(optimizer.param_groups[0]["params"])
        self.params = params
        self.enabled = self.applies(optimizer)
        # per parameter: has a gradient in this step (watch_gradients; a distributed step puts the ranks' answer here)
        self.received: list[bool] | None = None
        self._hook_handles: list = []
        if not self.enabled:
            return
        total = sum(p.numel() for p in params)
        like = params[0]
        self.flat_param = torch.empty(total, dtype=like.dtype, device=like.device)
        self.grad_buffer = torch.zeros(total + spare, dtype=like.dtype, device=like.device)
        self.flat_grad = self.grad_buffer[:total]
        self.spare = self.grad_buffer[total:]
        self.exp_avg = torch.zeros_like(self.flat_param)
        self.exp_avg_sq = torch.zeros_like(self.flat_param)
        self._param_views, self._grad_views, self._avg_views, self._avg_sq_views = [], [], [], []
        offset = 0
        for p in params:
            n = p.numel()
            self._param_views.append(self.flat_param[offset : offset + n].view_as(p))
            self._grad_views.append(self.flat_grad[offset : offset + n].view_as(p))
            self._avg_views.append(self.exp_avg[offset : offset + n].view_as(p))
            self._avg_sq_views.append(self.exp_avg_sq[offset : offset + n].view_as(p))
            offset += n
        with torch.no_grad():
            for p, view in zip(params, self._param_views, strict=True):
                view.copy_(p)
                p.data = view
        self._data_ptrs = [p.data_ptr() for p in params]
        self._adopted_state: object = None  # the optimizer.state dict whose moments are ours
        self._step: Tensor | None = None
        if watch_gradients:
            self._watch_gradients()

    @staticmethod
    def applies(optimizer: torch.optim.Optimizer) -> bool:
        """Whether flat tensors can hold this optimiser's parameters and state (see the class docstring)."""
        params = list(optimizer.param_groups[0]["params"])
        return (
            LeanAdamStep(optimizer).enabled
            and bool(params)
            and len({(p.device, p.dtype) for p in params}) == 1
            and all(p.is_contiguous() for p in params)
        )

    def _watch_gradients(self) -> None:
        """Record which parameters autograd gives a gradient (hooks after accumulation): a flat step would update
        one that got none with a zero gradient, where torch's Adam skips it."""
        self.received = [False] * len(self.params)
        for i, p in enumerate(self.params):
            self._hook_handles.append(p.register_post_accumulate_grad_hook(functools.partial(self._mark, i)))

    def _mark(self, index: int, _param: Tensor) -> None:
        self.received[index] = True

    def zero_grad(self) -> bool:
        """Zero every gradient (views of ``flat_grad``) before a backward pass; False when flat mode is off."""
        if not self.enabled:
            return False
        params = self.params
        if any(p.data_ptr() != ptr for p, ptr in zip(params, self._data_ptrs, strict=True)):
            self._switch_off()  # the weights live in other tensors now: the flat copies are no longer them
            for p in params:
                p.grad = None
            return False
        for p, view in zip(params, self._grad_views, strict=True):
            if p.grad is not view:
                p.grad = view
        self.grad_buffer.zero_()
        if self.received is not None:
            self.received[:] = [False] * len(params)
        return True

    def clip_and_step(self, max_norm: float) -> Tensor | None:
        """Clip the gradients to ``max_norm`` (total 2-norm; no clipping at ``inf``) and make one Adam update.

        The returned norm is that before clipping. None when flat mode is off or the moments cannot be adopted (the
        optimiser has not made its first step yet): the caller then runs the per-tensor path on the same gradients.
        """
        if not self.enabled:
            return None
        if self.received is not None and not all(self.received):
            self._stop_for_missing_gradients()
            return None
        if _has_step_hooks(self.optimizer):
            self._release_moments()  # optimizer.step() must run the hooks, and it needs a step counter per tensor
            return None
        if self.optimizer.state is not self._adopted_state and not self._adopt_moments():
            return None
        grad = self.flat_grad
        total_norm = torch.linalg.vector_norm(grad)
        if max_norm != float("inf"):
            grad.mul_(torch.clamp(max_norm / (total_norm + 1e-6), max=1.0))
        group = self.optimizer.param_groups[0]
        _fused_adam_update(group, [self.flat_param], [grad], [self.exp_avg], [self.exp_avg_sq], [self._step])
        return total_norm

    def _adopt_moments(self) -> bool:
        """Move the optimiser's per-parameter moments into the flat buffers; False if they are not all there yet."""
        state = self.optimizer.state
        group_params = self.optimizer.param_groups[0]["params"]
        if len(group_params) != len(self.params):
            return False
        if any(a is not b for a, b in zip(group_params, self.params, strict=True)):
            return False
        entries = [state.get(p) for p in self.params]
        if any(not entry or "exp_avg" not in entry for entry in entries):
            return False
        steps = {float(entry["step"]) for entry in entries}
        if len(steps) != 1:
            return False  # parameters that started getting gradients at different steps: keep the per-tensor path
        step = entries[0]["step"].detach().clone()
        with torch.no_grad():
            for entry, avg, avg_sq in zip(entries, self._avg_views, self._avg_sq_views, strict=True):
                if entry["exp_avg"] is not avg:
                    avg.copy_(entry["exp_avg"])
                    avg_sq.copy_(entry["exp_avg_sq"])
                entry["exp_avg"], entry["exp_avg_sq"], entry["step"] = avg, avg_sq, step
        self._step = step
        self._adopted_state = state
        return True

    def _stop_for_missing_gradients(self) -> None:
        """Some parameter got no gradient in this step: leave flat mode for good, and give those parameters no
        gradient (``None``), so the caller's per-tensor step skips them as torch's Adam does; their moments and
        step counters then differ from the others', which flat tensors cannot represent."""
        missing = [p for p, received in zip(self.params, self.received, strict=True) if not received]
        self._switch_off()
        for p in missing:
            p.grad = None
        log.info(
            "Flat Adam switched off: %d of %d parameter tensors got no gradient in this step; the per-tensor Adam "
            "step skips them as torch's does",
            len(missing),
            len(self.params),
        )

    def _switch_off(self) -> None:
        self.enabled = False
        self._release_moments()
        for handle in self._hook_handles:
            handle.remove()
        self._hook_handles, self.received = [], None

    def _release_moments(self) -> None:
        """Give each parameter its own step counter again (the per-tensor step adds one to each counter it is given)."""
        if self._adopted_state is None:
            return
        for p in self.params:
            entry = self.optimizer.state.get(p)
            if entry and entry.get("step") is self._step:
                entry["step"] = self._step.clone()
        self._adopted_state = None


def skip_dynamo_import() -> bool:
    """Let torch.optim's methods run without importing ``torch._dynamo`` (about a second of a learner's start-up).

    torch wraps ``Optimizer.add_param_group``, ``zero_grad``, ``state_dict`` and others in ``torch._disable_dynamo``,
    whose first call imports ``torch._dynamo`` only to build a "do not trace this" wrapper, then caches it on the
    wrapped function. That wrapper matters only while ``torch.compile`` traces the caller; the learner never calls its
    optimizer from compiled code. So when ``torch._dynamo`` is not loaded yet (no user code compiles in this process),
    the cache is filled with the function itself and nothing is imported; when it is loaded, torch's own path runs.
    A torch whose wrapper is built differently is left as it is. Returns whether the wrappers were filled; the
    decision is logged once per process.
    """
    global _dynamo_decision_logged
    loaded = "torch._dynamo" in sys.modules
    filled = fill_dynamo_disable_caches(_optimizer_classes())
    if not _dynamo_decision_logged:
        _dynamo_decision_logged = True
        if filled:
            log.info("Optimizer: torch.optim's dynamo guards skipped (torch._dynamo is not loaded: no import needed)")
        else:
            why = "torch._dynamo is loaded already" if loaded else "this torch builds them differently, or it is off"
            log.info("Optimizer: torch.optim's dynamo guards kept: %s", why)
    return filled


_dynamo_decision_logged = False


def _optimizer_classes() -> list[type]:
    classes = [torch.optim.Optimizer, Lamb]
    classes += [c for c in vars(torch.optim).values() if isinstance(c, type) and issubclass(c, torch.optim.Optimizer)]
    return classes


def make_optimizer(cfg: Config, params: Iterable[Tensor]) -> torch.optim.Optimizer:
    """``--optimizer``: Adam (``--adam_eps``, ``--adam_beta1/2``) or LAMB, at ``--learning_rate``."""
    skip_dynamo_import()
    betas = (cfg.adam_beta1, cfg.adam_beta2)
    if cfg.optimizer == "adam":
        return _fused_adam_if_supported(params, lr=cfg.learning_rate, betas=betas, eps=cfg.adam_eps)
    if cfg.optimizer == "lamb":
        optimizer = Lamb(params, lr=cfg.learning_rate or 1.0, betas=betas, eps=cfg.adam_eps)  # Lamb rejects lr=0
        for group in optimizer.param_groups:
            group["lr"] = cfg.learning_rate
        return optimizer
    raise ValueError(f"--optimizer={cfg.optimizer!r} is not supported: use adam or lamb")


def _fused_adam_if_supported(params: Iterable[Tensor], **hyperparameters) -> torch.optim.Adam:
    """A fused ``torch.optim.Adam`` (one kernel for every tensor; the lean and flat paths above build on it), or
    torch's default Adam where this torch cannot fuse these parameters (torch before 2.4 fuses CUDA tensors only),
    said in one log line."""
    params = list(params)
    try:
        return torch.optim.Adam(params, fused=True, **hyperparameters)
    except RuntimeError as error:
        global _unfused_adam_logged
        if not _unfused_adam_logged:
            _unfused_adam_logged = True
            log.info("Optimizer: torch's default Adam, not the fused one (torch %s: %s)", torch.__version__, error)
        return torch.optim.Adam(params, **hyperparameters)


_unfused_adam_logged = False


class SgdStep:
    """Backward, gradient clipping and one optimiser update, with as little per-step bookkeeping as the optimiser
    allows: through ``FlatAdam`` when ``flat`` and it applies, else ``clip_grad_norm`` (or torch's, for parameters
    on several devices or dtypes) and ``LeanAdamStep`` over per-tensor gradients. On small networks that bookkeeping
    cost as much as the backward pass itself. The caller sets the learning rate in the param groups.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        params: Iterable[Tensor],
        flat: bool = True,
        watch_gradients: bool = False,
    ) -> None:
        self.optimizer = optimizer
        self.params = list(params)  # walking the module tree costs per step
        self.uniform = len({(p.device, p.dtype) for p in self.params}) <= 1
        self.lean_step = LeanAdamStep(optimizer)
        self.flat = FlatAdam(optimizer, watch_gradients) if flat and FlatAdam.applies(optimizer) else None

    def __call__(self, loss: Tensor, max_norm: float) -> Tensor:
        """One step on ``loss``; the gradient norm before clipping to ``max_norm`` (``inf``: no clipping)."""
        flat = self.flat
        if flat is None or not flat.zero_grad():
            for param in self.params:
                param.grad = None
        loss.backward()
        return self._clip_and_update(max_norm)

    def _clip_and_update(self, max_norm: float) -> Tensor:
        """Clip the gradients the backward pass left (flat or per tensor) and update; the norm before clipping."""
        flat = self.flat
        grad_norm = None if flat is None else flat.clip_and_step(max_norm)
        if grad_norm is None:
            if self.uniform:
                grad_norm = clip_grad_norm([p.grad for p in self.params if p.grad is not None], max_norm)
            else:
                grad_norm = torch.nn.utils.clip_grad_norm_(self.params, max_norm)
            self.lean_step()
        return grad_norm.detach()
