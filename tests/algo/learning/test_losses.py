"""The fused PPO loss (value and hand-derived gradients against the formulas written with autograd) and the
standardisation of all minibatches at once against one by one."""

from __future__ import annotations

import math

import pytest
import torch

from sample_factory.algo.learning.losses import (
    ADV_STD_EPS,
    RATIO_MAX,
    RATIO_MIN,
    PPOLossInputs,
    normalize_advantages,
    ppo_loss,
    ppo_loss_autograd,
    standardize_rows,
)
from sample_factory.utils.torch_utils import ValidMean

CLIP_RATIO, CLIP_VALUE, VALUE_COEFF = 0.1, 0.2, 0.7


def _reference_loss(log_probs, values, extra, old_log_probs, advantages, old_values, targets, valids):
    """The PPO loss as the papers write it, every step recorded by autograd."""
    weights = valids.float()
    count = weights.sum().clamp(min=1.0)
    mean = (advantages * weights).sum() / count
    std = (((advantages - mean) ** 2 * weights).sum() / count).sqrt()
    adv = (advantages - mean) / (std + ADV_STD_EPS)
    ratios = torch.exp(torch.clamp(log_probs - old_log_probs, math.log(RATIO_MIN), math.log(RATIO_MAX)))
    clipped = torch.clamp(ratios, 1.0 / (1.0 + CLIP_RATIO), 1.0 + CLIP_RATIO)
    policy = -torch.min(ratios * adv, clipped * adv)
    v_clipped = old_values + torch.clamp(values - old_values, -CLIP_VALUE, CLIP_VALUE)
    value = VALUE_COEFF * torch.max((values - targets) ** 2, (v_clipped - targets) ** 2)
    terms = policy + value + (0.0 if extra is None else extra)
    return (terms * weights).sum() / count


def _inputs(batch: int, seed: int, dtype=torch.float32) -> dict:
    g = torch.Generator().manual_seed(seed)
    log_probs = (torch.randn(batch, generator=g, dtype=dtype) * 0.3 - 0.7).requires_grad_()
    values = torch.randn(batch, generator=g, dtype=dtype).requires_grad_()
    old_log_probs = log_probs.detach() + torch.randn(batch, generator=g, dtype=dtype) * 0.2
    old_log_probs[:4] += torch.tensor([8.0, -8.0, 3.5, -3.5], dtype=dtype)  # ratios held by the hard bounds
    old_values = values.detach() + torch.randn(batch, generator=g, dtype=dtype) * 0.4  # some outside +-CLIP_VALUE
    return dict(
        log_probs=log_probs,
        values=values,
        extra=torch.randn(batch, generator=g, dtype=dtype).requires_grad_(),
        old_log_probs=old_log_probs,
        advantages=torch.randn(batch, generator=g, dtype=dtype) * 3.0 + 1.0,
        old_values=old_values,
        targets=torch.randn(batch, generator=g, dtype=dtype),
        valids=torch.rand(batch, generator=g) > 0.15,
    )


def _fused(x: dict, extra=True):
    valid_mean = ValidMean(x["valids"])
    return ppo_loss(x["log_probs"], x["values"], x["extra"] if extra else None, _loss_inputs(x, valid_mean))


def _loss_inputs(x: dict, valid_mean: ValidMean, std_advantages=None) -> PPOLossInputs:
    if std_advantages is None:
        std_advantages = normalize_advantages(x["advantages"], valid_mean)
    return PPOLossInputs(
        x["old_log_probs"],
        std_advantages,
        x["old_values"],
        x["targets"],
        valid_mean,
        CLIP_RATIO,
        CLIP_VALUE,
        VALUE_COEFF,
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("extra", [True, False])
def test_fused_loss_and_gradients_equal_the_autograd_formulas(seed: int, extra: bool):
    x = _inputs(256, seed)
    inputs = [x["log_probs"], x["values"]] + ([x["extra"]] if extra else [])
    expected = _reference_loss(
        x["log_probs"], x["values"], x["extra"] if extra else None, x["old_log_probs"], x["advantages"],
        x["old_values"], x["targets"], x["valids"],
    )  # fmt: skip
    expected_grads = torch.autograd.grad(expected, inputs)
    fused = _fused(x, extra)
    grads = torch.autograd.grad(fused.loss, inputs)
    torch.testing.assert_close(fused.loss, expected, rtol=1e-6, atol=1e-6)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, expected_grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_autograd_loss_equals_the_formulas_and_the_fused_node(seed: int):
    """The plain path for models the fused node's check does not accept: the same loss, terms and gradients."""
    x = _inputs(256, seed)
    inputs = [x["log_probs"], x["values"], x["extra"]]
    valid_mean = ValidMean(x["valids"])
    plain = ppo_loss_autograd(x["log_probs"], x["values"], x["extra"], _loss_inputs(x, valid_mean))
    expected = _reference_loss(
        x["log_probs"], x["values"], x["extra"], x["old_log_probs"], x["advantages"], x["old_values"], x["targets"],
        x["valids"],
    )  # fmt: skip
    torch.testing.assert_close(plain.loss, expected, rtol=1e-6, atol=1e-6)
    grads, expected_grads = torch.autograd.grad(plain.loss, inputs), torch.autograd.grad(expected, inputs)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, expected_grad, rtol=1e-5, atol=1e-7)
    fused = _fused(x)
    for name in ("policy_terms", "value_terms", "ratios"):
        torch.testing.assert_close(getattr(plain, name), getattr(fused, name), msg=name)
        assert not getattr(plain, name).requires_grad


def test_gradients_pass_a_numerical_check_in_double_precision():
    x = _inputs(24, seed=3, dtype=torch.float64)
    valid_mean = ValidMean(x["valids"])
    inputs = _loss_inputs(x, valid_mean)

    def loss(log_probs, values, extra):
        return ppo_loss(log_probs, values, extra, inputs).loss

    assert torch.autograd.gradcheck(loss, (x["log_probs"], x["values"], x["extra"]), eps=1e-7, atol=1e-6)


def test_samples_outside_the_clip_ranges_or_invalid_get_no_gradient():
    x = _inputs(256, seed=4)
    fused = _fused(x)
    grad_log_probs, grad_values, grad_extra = torch.autograd.grad(fused.loss, [x["log_probs"], x["values"], x["extra"]])
    invalid = ~x["valids"]
    assert invalid.any() and not grad_log_probs[invalid].any() and not grad_values[invalid].any()
    assert not grad_extra[invalid].any()
    held = (x["log_probs"] - x["old_log_probs"]).abs().detach() > math.log(RATIO_MAX)
    assert held[:2].all() and not grad_log_probs[held].any()  # the hard bounds hold these ratios still
    # a clipped ratio on the side where clipping binds: no gradient (the minimum took the constant branch)
    adv_sign = torch.sign(x["advantages"] - x["advantages"][x["valids"]].mean())
    ratios = fused.ratios
    binding = (
        x["valids"]
        & ~held
        & (((ratios > 1 + CLIP_RATIO) & (adv_sign > 0)) | ((ratios < 1 / (1 + CLIP_RATIO)) & (adv_sign < 0)))
    )
    assert binding.any() and not grad_log_probs[binding].any()


def test_no_valid_sample_gives_a_zero_loss_and_zero_gradients():
    x = _inputs(16, seed=5)
    x["valids"] = torch.zeros(16, dtype=torch.bool)
    fused = _fused(x)
    grads = torch.autograd.grad(fused.loss, [x["log_probs"], x["values"], x["extra"]])
    assert fused.loss.item() == 0.0 and all(not grad.any() for grad in grads)


def test_reported_terms_carry_no_gradient_and_include_the_value_coefficient():
    x = _inputs(64, seed=6)
    fused = _fused(x, extra=False)
    assert fused.loss.requires_grad
    assert not (fused.policy_terms.requires_grad or fused.value_terms.requires_grad or fused.ratios.requires_grad)
    valid_mean = ValidMean(x["valids"])
    torch.testing.assert_close(valid_mean(fused.policy_terms) + valid_mean(fused.value_terms), fused.loss.detach())
    v = x["values"].detach()
    v_clipped = x["old_values"] + (v - x["old_values"]).clamp(-CLIP_VALUE, CLIP_VALUE)
    expected_value_terms = VALUE_COEFF * torch.max((v - x["targets"]) ** 2, (v_clipped - x["targets"]) ** 2)
    torch.testing.assert_close(fused.value_terms, expected_value_terms)


def test_minibatches_standardised_at_once_equal_one_by_one():
    g = torch.Generator().manual_seed(7)
    advantages = torch.randn(4, 64, generator=g) * 5.0 + 2.0
    valids = torch.rand(4, 64, generator=g) > 0.2
    valids[2] = False  # a minibatch without a valid sample: weights 0, count clamped to 1
    valid_means, weights, inv_counts = ValidMean.rows(valids)
    rows = standardize_rows(advantages, weights, inv_counts)
    for m in range(4):
        alone = ValidMean(valids[m])
        torch.testing.assert_close(valid_means[m].inv_count, alone.inv_count)
        torch.testing.assert_close(valid_means[m](advantages[m]), alone(advantages[m]))
        torch.testing.assert_close(rows[m], normalize_advantages(advantages[m], alone), rtol=1e-5, atol=1e-6)
