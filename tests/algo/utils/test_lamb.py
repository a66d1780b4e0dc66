"""The LAMB optimiser at Sample Factory 2's ``algo.utils.optimizers`` path: its update checked by hand."""

from __future__ import annotations

import math

import pytest
import torch

from sample_factory.algo.utils.optimizers import Lamb


def _one_step(weights: list[float], grads: list[float], **kwargs: object) -> torch.Tensor:
    w = torch.nn.Parameter(torch.tensor(weights))
    optimizer = Lamb([w], **kwargs)
    w.grad = torch.tensor(grads)
    optimizer.step()
    return w.detach()


def test_first_step_is_the_sign_of_the_gradient_scaled_by_the_trust_ratio() -> None:
    # step 1 with bias correction: m = g, v = g**2, so u = g / (|g| + eps) ~ sign(g); r = ||w|| / ||u||
    w0, g = [3.0, 4.0], [0.5, -2.0]
    new = _one_step(w0, g, lr=0.1, eps=0.0)
    u = torch.tensor([1.0, -1.0])
    r = 5.0 / math.sqrt(2.0)
    torch.testing.assert_close(new, torch.tensor(w0) - 0.1 * r * u)


def test_weight_decay_joins_the_update_before_the_trust_ratio() -> None:
    w0, g = [3.0, 4.0], [1.0, 1.0]
    new = _one_step(w0, g, lr=0.1, eps=0.0, weight_decay=0.5)
    u = torch.tensor([1.0, 1.0]) + 0.5 * torch.tensor(w0)
    torch.testing.assert_close(new, torch.tensor(w0) - 0.1 * (5.0 / u.norm()) * u)


def test_zero_weights_take_a_plain_adam_step_and_min_trust_bounds_the_ratio() -> None:
    torch.testing.assert_close(_one_step([0.0, 0.0], [2.0, -1.0], lr=0.1, eps=0.0), torch.tensor([-0.1, 0.1]))
    # ||w|| / ||u|| = 1e-3 / sqrt(2) is below min_trust=0.5: the ratio is 0.5
    new = _one_step([1e-3, 0.0], [1.0, 1.0], lr=0.1, eps=0.0, min_trust=0.5)
    torch.testing.assert_close(new, torch.tensor([1e-3 - 0.05, -0.05]))


def test_look_ahead_pulls_the_weights_back_every_k_steps() -> None:
    w = torch.nn.Parameter(torch.tensor([1.0]))
    optimizer = Lamb([w], lr=0.1, use_look_ahead=True, look_ahead_alpha=0.5, look_ahead_k=2)
    for step in range(2):
        w.grad = torch.tensor([1.0])
        before = w.detach().clone()
        optimizer.step()
        if step == 0:
            assert w.item() < before.item()
    # two fast steps of 0.1 each (trust ratio 1 / 1 at w=1, then ~0.9 / 1): halfway back from the fast weights
    fast = 1.0 - 0.1 - 0.1 * 0.9
    assert w.item() == pytest.approx(1.0 + 0.5 * (fast - 1.0), abs=1e-4)


def test_minimises_a_quadratic() -> None:
    w = torch.nn.Parameter(torch.tensor([2.0, -3.0]))
    optimizer = Lamb([w], lr=0.05)
    for _ in range(300):
        optimizer.zero_grad()
        loss = ((w - torch.tensor([0.5, 0.25])) ** 2).sum()
        loss.backward()
        optimizer.step()
    torch.testing.assert_close(w.detach(), torch.tensor([0.5, 0.25]), atol=0.05, rtol=0)


def test_bad_hyperparameters_are_refused() -> None:
    with pytest.raises(ValueError, match="betas"):
        Lamb([torch.nn.Parameter(torch.ones(1))], betas=(0.9, 1.0))
