"""The learner's fast paths: channels-last conv nets, flat Adam and the fused PPO loss, where they are proven safe.

- **Channels-last** (CPU, models with ``nn.Conv2d``; ``torch_utils.trains_faster_channels_last``): conv weights and
  image batches in NHWC order. A user module that flattens with ``x.view(...)`` fails on such tensors (they are not
  contiguous in NCHW), and one that reads memory directly could compute something else.
- **Flat Adam** (``optimizers.FlatAdam``): weights, gradients and moments as views of flat tensors. It re-points
  ``param.data``, so a module holding an old ``.data`` reference would read stale weights; a parameter without a
  gradient in some step is watched for (``watch_gradients``) and ends flat mode, since torch's Adam would skip it.
- **Fused PPO loss** (``losses.ppo_loss``): one autograd node over the policy's log-probs and values; proven for one
  log-prob and one value per sample, whatever computed them (a custom distribution included).

The library's modules use all three; a model holding user modules uses each only after a start-up comparison with
the plain path on copies of the model and dummy batches of the real observation space (``model.fast_path_checks``):
the same outputs and gradients (channels-last, fused loss), the same weights after three SGD steps (flat Adam).
"""

from __future__ import annotations

import functools
import types

import gymnasium as gym
import torch
from torch import nn

from sample_factory.algo.learning.losses import PPOLossInputs, normalize_advantages, ppo_loss, ppo_loss_autograd
from sample_factory.algo.learning.optimizers import FlatAdam, SgdStep, make_optimizer
from sample_factory.model.core import ModelCoreRNN
from sample_factory.model.fast_path_checks import (
    CHANNELS_LAST,
    CHECK_BATCH_SIZE,
    CHECK_SEED,
    DISABLE_ENV,
    FLAT_ADAM,
    FORCE_ENV,
    FUSED_LOSS,
    GRU_BPTT,
    LABELS,
    CheckFailed,
    DummyBatch,
    Outputs,
    Verdict,
    compare,
    copies,
    decide,
    dummy_batch,
    is_library_module,
    learner_outputs,
    run_variant,
    switched,
    user_modules,
    weighted_sum,
    with_gradients,
)
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.torch_utils import ValidMean
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import log

WHO = "Learner"
CHECK_LEARNING_RATE = 1e-3  # the run's own may be 0 (weights that never move would prove nothing)
CHECK_SGD_STEPS = 3  # the first Adam step creates the moments the later flat steps adopt


class LearnerFastPaths:
    """Which of the learner's fast paths its model may use; each decision runs its check once and logs one line."""

    def __init__(self, cfg: Config, model: nn.Module, obs_space: gym.Space, device: torch.device) -> None:
        self.cfg, self.model, self.device = cfg, model, device
        self._batch = functools.cache(lambda seed: dummy_batch(obs_space, get_rnn_size(cfg), device, seed))

    def channels_last(self) -> bool:
        """Whether to train NHWC (ask only where ``trains_faster_channels_last``: CPU, conv layers)."""
        check = functools.partial(check_channels_last, self.model, self._batch(CHECK_SEED))
        return decide(WHO, CHANNELS_LAST, self.model, check, self.device)

    def flat_adam(self, optimizer: torch.optim.Optimizer) -> tuple[bool, bool]:
        """``(flat, watch_gradients)`` for ``SgdStep`` over ``optimizer`` (the model already in its final layout)."""
        if not FlatAdam.applies(optimizer):
            return False, False
        rnn = cudnn_rnn(self.model, self.device)
        if rnn is not None and FLAT_ADAM not in switched(FORCE_ENV):
            log.info(
                "%s: %s skipped: the model's %s runs through cuDNN on %s, which reads its weights from one buffer of "
                "its own (as views of the flat tensor they would be copied there at every call)",
                WHO, LABELS[FLAT_ADAM], type(rnn).__name__, self.device,
            )  # fmt: skip
            return False, False
        batches = [self._batch(CHECK_SEED + k) for k in range(CHECK_SGD_STEPS)]
        check = functools.partial(check_flat_adam, self.model, self.cfg, batches)
        flat = decide(WHO, FLAT_ADAM, self.model, check, self.device)
        forced = FLAT_ADAM in switched(FORCE_ENV)
        return flat, flat and not forced and bool(user_modules(self.model))

    def fused_loss(self) -> bool:
        """Whether the loss is ``losses.ppo_loss`` (else ``losses.ppo_loss_autograd``)."""
        check = functools.partial(check_fused_loss, self.model, self.cfg, self._batch(CHECK_SEED))
        return decide(WHO, FUSED_LOSS, self.model, check, self.device)


def cudnn_rnn(model: nn.Module, device: torch.device) -> nn.RNNBase | None:
    """The first torch RNN of ``model`` that cuDNN runs on ``device``, if any.

    cuDNN takes an RNN's weights from one buffer laid out its way (``nn.RNNBase.flatten_parameters``, done by
    ``model.to(device)``); weights that live elsewhere, such as views of flat Adam's tensor, are copied into a new
    buffer at every forward pass, with torch's warning that they are "not part of single contiguous chunk of memory".
    """
    if device.type != "cuda" or not torch.backends.cudnn.enabled:
        return None
    return next((module for module in model.modules() if isinstance(module, nn.RNNBase)), None)


def use_gru_bptt(model: nn.Module, device: torch.device) -> bool:
    """Switch the model's library GRU cores to ``gru_bptt.packed_gru`` for their packed sequences; one log line
    where the model has such a core.

    No start-up check: the kernel runs only inside the library's ``ModelCoreRNN`` on its own ``nn.GRU`` (a user's
    core, a replaced ``core.core``, hooks or a ``forward`` of an instance's own keep ``nn.GRU``, call by call), and
    ``tests/model/test_gru_bptt.py`` holds its outputs and gradients to ``nn.GRU``'s."""
    cores = [
        module
        for module in model.modules()
        if isinstance(module, ModelCoreRNN) and is_library_module(module) and type(module.core) is nn.GRU
    ]
    if not cores:
        return False
    label = LABELS[GRU_BPTT]
    if GRU_BPTT in switched(DISABLE_ENV):
        log.info("%s: %s skipped: switched off by %s", WHO, label, DISABLE_ENV)
        return False
    if device.type != "cpu":
        log.info("%s: %s skipped: the model is on %s, where torch's GRU kernels are the fast ones", WHO, label, device)
        return False
    if any(core.num_layers != 1 for core in cores):
        log.info("%s: %s skipped: --rnn_num_layers=%d (the kernel is for one layer)", WHO, label, cores[0].num_layers)
        return False
    for core in cores:
        core.gru_bptt = True
    log.info("%s: %s used (the library's single-layer GRU core)", WHO, label)
    return True


def check_channels_last(model: nn.Module, batch: DummyBatch) -> None:
    """NHWC weights and images give the outputs and gradients of NCHW; NHWC weights on NCHW images (the bootstrap
    values of ``prepare_batch``) the same values. Raises ``CheckFailed``."""
    # a copy per pass: each forward in training mode updates the normalisers, and the values-only pass must see
    # the statistics of exactly one update, like the other two
    plain, fast, fast_values = copies(model, 3)
    fast.to(memory_format=torch.channels_last)
    fast_values.to(memory_format=torch.channels_last)
    expected = run_variant(
        "its forward fails on a dummy batch", lambda: with_gradients(plain, learner_outputs(plain, batch)), plain
    )
    got = run_variant(
        "its forward fails on NHWC tensors",
        lambda: with_gradients(fast, learner_outputs(fast, batch, nhwc_obs=True)),
        fast,
    )
    compare("on NHWC tensors", expected, got)
    with torch.no_grad():
        values = run_variant(
            "its forward fails with NHWC weights",
            lambda: learner_outputs(fast_values, batch, values_only=True),
            fast_values,
        )
    compare("with NHWC weights on NCHW images", {"values": expected["values"].detach()}, values)


def check_flat_adam(model: nn.Module, cfg: Config, batches: list[DummyBatch]) -> None:
    """``CHECK_SGD_STEPS`` steps through ``FlatAdam`` give the outputs and weights of the per-tensor steps. Raises
    ``CheckFailed``.

    Without clipping, both paths make the same elementwise updates, so what could differ is what the module does with
    its parameters' memory (a ``.data`` reference kept from before the weights moved into the flat tensor); with
    clipping, the norm's summation order alone moves large models' weights by ~1e-5 of their scale."""
    plain, fast = copies(model, 2)
    expected = run_variant(
        "its training steps fail on dummy batches", lambda: _train_steps(plain, cfg, batches, flat=False), plain
    )
    got = run_variant("its training steps fail with flat Adam", lambda: _train_steps(fast, cfg, batches, True), fast)
    compare("with flat Adam", expected, got)


def _train_steps(model: nn.Module, cfg: Config, batches: list[DummyBatch], flat: bool) -> Outputs:
    params = list(model.parameters())
    check_cfg = types.SimpleNamespace(
        optimizer=cfg.optimizer, adam_beta1=cfg.adam_beta1, adam_beta2=cfg.adam_beta2, adam_eps=cfg.adam_eps,
        learning_rate=CHECK_LEARNING_RATE,
    )  # fmt: skip
    step = SgdStep(make_optimizer(check_cfg, params), params, flat=flat, watch_gradients=flat)
    record: Outputs = {}
    for k, batch in enumerate(batches):
        outputs = learner_outputs(model, batch)
        record.update({f"step {k} {key}": value for key, value in outputs.items()})
        loss = weighted_sum(outputs)
        if loss is None:
            raise CheckFailed(Verdict("none of its outputs depends on a trained parameter"))
        step(loss, float("inf"))  # unclipped: the two paths sum the gradient norm in different orders
    record.update({f"{name} after the steps": p.detach().clone() for name, p in model.named_parameters()})
    return record


def check_fused_loss(model: nn.Module, cfg: Config, batch: DummyBatch) -> None:
    """The fused PPO loss gives the loss, per-sample terms and parameter gradients of the autograd formulas on the
    model's log-probs and values, which must be one per sample. Raises ``CheckFailed``."""
    plain, fast = copies(model, 2)
    expected = run_variant(
        "its loss fails on a dummy batch", lambda: _loss_and_gradients(plain, cfg, batch, ppo_loss_autograd), plain
    )
    got = run_variant(
        "its loss fails through the fused node", lambda: _loss_and_gradients(fast, cfg, batch, ppo_loss), fast
    )
    compare("with the fused PPO loss", expected, got)


def _loss_and_gradients(model: nn.Module, cfg: Config, batch: DummyBatch, loss_function) -> Outputs:
    outputs = learner_outputs(model, batch)
    log_probs, values = outputs["log_probs"], outputs["values"]
    per_sample = (CHECK_BATCH_SIZE,)
    if tuple(log_probs.shape) != per_sample or tuple(values.shape) != per_sample:
        raise CheckFailed(
            Verdict(
                f"its log-probs are {tuple(log_probs.shape)} and its values {tuple(values.shape)}; the fused loss is "
                f"proven for one of each per sample, {per_sample}"
            )
        )
    generator = torch.Generator().manual_seed(CHECK_SEED)

    def near(x: torch.Tensor, scale: float) -> torch.Tensor:
        return x.detach() + (torch.randn(x.shape, generator=generator) * scale).to(x)

    valids = torch.ones(per_sample, dtype=torch.bool, device=values.device)
    valids[-1] = False  # an invalid sample must contribute nothing
    valid_mean = ValidMean(valids)
    advantages = normalize_advantages(near(torch.zeros_like(values), 1.0), valid_mean)
    inputs = PPOLossInputs(
        near(log_probs, 0.3), advantages, near(values, 0.3), near(values, 1.0), valid_mean, cfg.ppo_clip_ratio,
        cfg.ppo_clip_value, cfg.value_loss_coeff,
    )  # fmt: skip
    result = loss_function(log_probs, values, None, inputs)
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    grads = torch.autograd.grad(result.loss, [p for _, p in named], allow_unused=True)
    found = {f"gradient of {name}": grad for (name, _), grad in zip(named, grads, strict=True)}
    terms = dict(loss=result.loss, policy_terms=result.policy_terms, value_terms=result.value_terms)
    return {**terms, "ratios": result.ratios, **found}
