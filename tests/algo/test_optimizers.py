"""LAMB: convergence on a quadratic and the layer-wise trust ratio of a single step."""

from __future__ import annotations

import pytest
import torch

from sample_factory.algo.utils.optimizers import Lamb


def test_lamb_minimises_a_quadratic():
    """With a decaying lr: LAMB's step norm is lr * ||x|| however small the gradient, so a fixed lr hovers."""
    torch.manual_seed(0)
    target = torch.randn(10)
    weights = torch.nn.Parameter(torch.randn(10))
    optimizer = Lamb([weights], lr=0.05)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.985)

    def loss_fn() -> torch.Tensor:
        return (weights - target).square().sum()

    initial_loss = loss_fn().item()
    for _ in range(300):
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        optimizer.step()
        scheduler.step()
    assert loss_fn().item() < 1e-3 * initial_loss


def test_step_size_follows_the_trust_ratio():
    """The first step has norm lr * ||x|| (phi clipped at max_weight_norm), whatever the gradient's scale."""
    lr = 0.01
    small = torch.nn.Parameter(torch.full((4,), 0.5))  # ||x|| = 1
    large = torch.nn.Parameter(torch.full((4,), 50.0))  # ||x|| = 100, clipped to 10
    optimizer = Lamb([small, large], lr=lr, max_weight_norm=10.0)
    before = [small.detach().clone(), large.detach().clone()]
    (1000.0 * small.sum() + 0.001 * large.square().sum()).backward()
    optimizer.step()
    assert (small.detach() - before[0]).norm().item() == pytest.approx(lr * 1.0, rel=1e-4)
    assert (large.detach() - before[1]).norm().item() == pytest.approx(lr * 10.0, rel=1e-4)


def test_zero_weights_take_a_plain_adam_step():
    bias = torch.nn.Parameter(torch.zeros(3))
    optimizer = Lamb([bias], lr=0.1)
    (bias * torch.tensor([1.0, -2.0, 3.0])).sum().backward()
    optimizer.step()
    torch.testing.assert_close(bias.detach(), torch.tensor([-0.1, 0.1, -0.1]), atol=1e-5, rtol=0)


def test_closure_loss_is_returned_and_bad_arguments_rejected():
    weights = torch.nn.Parameter(torch.ones(2))
    optimizer = Lamb([weights])

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = weights.sum()
        loss.backward()
        return loss

    assert optimizer.step(closure).item() == 2.0
    with pytest.raises(ValueError, match="betas"):
        Lamb([weights], betas=(0.9, 1.0))
