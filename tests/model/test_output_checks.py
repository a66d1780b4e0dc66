"""check_action_parameters: every NaN or inf is caught, finite values pass even when their sum overflows."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from sample_factory.envs.contract_errors import PolicyOutputError
from sample_factory.model.output_checks import check_action_parameters


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("where", [(0, 0), (5, 1), (11, 0)])
def test_a_single_non_finite_value_is_caught(bad: float, where: tuple[int, int]) -> None:
    logits = torch.randn(12, 2)
    logits[where] = bad
    with pytest.raises(PolicyOutputError, match=r"non-finite action distribution parameters \((nan|-?inf) in 1 of 24"):
        check_action_parameters(nn.Identity(), logits, 0, 3)


def test_opposite_infinities_are_caught() -> None:
    logits = torch.zeros(4, 2)
    logits[0, 0], logits[1, 1] = float("inf"), float("-inf")  # +inf + -inf = nan: still a non-finite sum
    with pytest.raises(PolicyOutputError, match="in 2 of 8"):
        check_action_parameters(nn.Identity(), logits, 0, 3)


def test_finite_values_pass_even_when_their_sum_overflows() -> None:
    check_action_parameters(nn.Identity(), torch.randn(12, 2), 0, 3)
    huge = torch.full((4, 3), 3.0e38)  # finite in float32, their sum is not
    assert not torch.isfinite(huge.sum())
    check_action_parameters(nn.Identity(), huge, 0, 3)
