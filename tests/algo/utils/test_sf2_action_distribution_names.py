"""Sample Factory 2's action-distribution names: parameter names and the masked softmax functions."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from sample_factory.algo.utils.action_distributions import (
    ContinuousActionDistribution,
    TupleActionDistribution,
    masked_log_softmax,
    masked_softmax,
)


def test_masked_softmax_zeroes_forbidden_entries_and_renormalises() -> None:
    logits = torch.tensor([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0]])
    mask = torch.tensor([[1, 0, 1], [0, 0, 1]])
    probs = masked_softmax(logits, mask)
    e0, e2 = torch.exp(torch.tensor(0.0)), torch.exp(torch.tensor(2.0))
    torch.testing.assert_close(probs[0], torch.stack([e0, torch.tensor(0.0), e2]) / (e0 + e2))
    assert probs[1].tolist() == [0.0, 0.0, 1.0]
    log_probs = masked_log_softmax(logits, mask)
    torch.testing.assert_close(log_probs[0, [0, 2]], probs[0, [0, 2]].log())
    assert torch.isfinite(log_probs).all() and log_probs[0, 1] < -1e30
    torch.testing.assert_close(masked_softmax(logits, None), torch.softmax(logits, dim=-1))


def test_continuous_distribution_takes_params_by_name() -> None:
    dist = ContinuousActionDistribution(params=torch.tensor([[1.0, -2.0, 0.0, 0.0]]))
    assert dist.means.tolist() == [[1.0, -2.0]] and dist.stds.tolist() == [[1.0, 1.0]]


@pytest.mark.parametrize("with_mask", [False, True])
def test_tuple_distribution_takes_logits_flat_and_action_mask(with_mask: bool) -> None:
    space = gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Discrete(2)])
    logits = torch.zeros(4, 5)
    mask = torch.tensor([[1, 0, 0, 0, 1]] * 4) if with_mask else None
    dist = TupleActionDistribution(action_space=space, logits_flat=logits, action_mask=mask)
    actions = dist.sample()
    assert actions.shape == (4, 2)
    if with_mask:
        assert actions.tolist() == [[0, 1]] * 4
        torch.testing.assert_close(dist.log_prob(actions), torch.zeros(4))
