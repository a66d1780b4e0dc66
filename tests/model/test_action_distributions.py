"""Action distributions against torch.distributions, plus masking, tuple layout and space helpers."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import Categorical, Normal, kl_divergence

from sample_factory.envs.spaces.discretized import Discretized
from sample_factory.model.action_distributions import (
    CategoricalActionDistribution,
    ContinuousActionDistribution,
    TupleActionDistribution,
    argmax_actions,
    buffer_actions,
    calc_num_action_parameters,
    calc_num_actions,
    get_action_distribution,
    is_continuous_action_space,
    sample_actions_log_probs,
)

BATCH = 64


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_categorical_matches_torch():
    logits, other_logits = torch.randn(BATCH, 5), torch.randn(BATCH, 5)
    dist = get_action_distribution(gym.spaces.Discrete(5), logits)
    other = get_action_distribution(gym.spaces.Discrete(5), other_logits)
    reference, reference_other = Categorical(logits=logits), Categorical(logits=other_logits)
    actions = dist.sample()
    assert actions.shape == (BATCH, 1) and actions.dtype == torch.int64  # one column per action number
    torch.testing.assert_close(dist.log_prob(actions), reference.log_prob(actions.squeeze(-1)))
    torch.testing.assert_close(dist.entropy(), reference.entropy())
    torch.testing.assert_close(dist.kl_divergence(other), kl_divergence(reference, reference_other))
    torch.testing.assert_close(dist.probs, reference.probs)


def test_categorical_log_prob_accepts_float_column_actions():
    dist = CategoricalActionDistribution(torch.randn(BATCH, 4))
    actions = torch.randint(0, 4, (BATCH,))
    torch.testing.assert_close(dist.log_prob(actions.float().unsqueeze(-1)), dist.log_prob(actions))


def test_categorical_samples_follow_probabilities():
    probs = torch.tensor([0.1, 0.6, 0.3])
    dist = CategoricalActionDistribution(probs.log().expand(20000, 3))
    frequencies = torch.bincount(dist.sample().squeeze(-1), minlength=3).float() / 20000
    torch.testing.assert_close(frequencies, probs, atol=0.02, rtol=0)


def test_rare_action_is_sampled_at_its_rate():
    """The exponential race keeps the law in the tails: p = 0.002 shows up 0.2 % of the time, not 0 % or more."""
    torch.manual_seed(3)
    probs = torch.tensor([0.998, 0.002])
    dist = CategoricalActionDistribution(probs.log().expand(400_000, 2))
    rare = int((dist.sample() == 1).sum())
    assert abs(rare - 800) < 5 * math.sqrt(800)  # binomial mean 800, sd ~28


def test_masked_action_is_never_sampled():
    logits = torch.zeros(10000, 4)
    logits[:, 2] = 10.0  # the masked action would dominate if the mask were ignored
    mask = torch.tensor([1, 1, 0, 1]).expand(10000, 4)
    dist = CategoricalActionDistribution(logits, mask)
    actions = dist.sample()
    assert not torch.any(actions == 2) and not torch.any(dist.sample_gumbel() == 2)
    assert set(actions.unique().tolist()) == {0, 1, 3}
    assert torch.isfinite(dist.entropy()).all()
    torch.testing.assert_close(dist.entropy(), torch.full((10000,), math.log(3)))
    assert torch.all(dist.log_prob(torch.full((10000,), 2)) < -1e30)
    assert torch.all(argmax_actions(dist) != 2)


def test_symmetric_kl_with_uniform_prior():
    logits = torch.randn(BATCH, 6)
    dist = CategoricalActionDistribution(logits)
    policy, uniform = Categorical(logits=logits), Categorical(probs=torch.full((BATCH, 6), 1 / 6))
    expected = kl_divergence(uniform, policy) + kl_divergence(policy, uniform)
    torch.testing.assert_close(dist.symmetric_kl_with_uniform_prior(), expected)


def test_symmetric_kl_uniform_prior_covers_only_allowed_actions():
    logits = torch.randn(BATCH, 4)
    mask = torch.tensor([True, False, True, True]).expand(BATCH, 4)
    dist = CategoricalActionDistribution(logits, mask)
    allowed_only = CategoricalActionDistribution(logits[:, [0, 2, 3]])
    torch.testing.assert_close(dist.symmetric_kl_with_uniform_prior(), allowed_only.symmetric_kl_with_uniform_prior())


def _normal(params: torch.Tensor) -> Normal:
    """Reference Gaussian; randn parameters reach past the log-std clamp, so the reference clamps too."""
    means, log_stds = params.chunk(2, dim=-1)
    return Normal(means, log_stds.clamp(-5.0, 2.0).exp())


def test_gaussian_matches_torch():
    params, other_params = torch.randn(BATCH, 6), torch.randn(BATCH, 6)
    space = gym.spaces.Box(-1, 1, (3,))
    dist, other = get_action_distribution(space, params), get_action_distribution(space, other_params)
    actions = dist.sample()
    assert actions.shape == (BATCH, 3)
    torch.testing.assert_close(dist.log_prob(actions), _normal(params).log_prob(actions).sum(-1))
    torch.testing.assert_close(dist.entropy(), _normal(params).entropy().sum(-1))
    torch.testing.assert_close(dist.kl_divergence(other), kl_divergence(_normal(params), _normal(other_params)).sum(-1))
    torch.testing.assert_close(argmax_actions(dist), params[:, :3])


def test_gaussian_std_is_clamped_and_tanh_scale_bounds_means():
    params = torch.tensor([[30.0, -30.0, -100.0, 100.0]])
    dist = ContinuousActionDistribution(params, tanh_scale=2.0)
    torch.testing.assert_close(dist.stds, torch.tensor([[math.exp(-5.0), math.exp(2.0)]]))
    torch.testing.assert_close(dist.means, torch.tensor([[2.0, -2.0]]))
    assert torch.isfinite(dist.log_prob(dist.sample())).all()


def test_tuple_log_prob_and_entropy_are_sums_of_parts():
    space = gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(4)])
    logits = torch.randn(BATCH, 3 + 4 + 4)
    dist = get_action_distribution(space, logits)
    assert isinstance(dist, TupleActionDistribution)
    actions = dist.sample()
    assert actions.shape == (BATCH, 4) and actions.dtype == torch.float32

    first, box, last = Categorical(logits=logits[:, :3]), _normal(logits[:, 3:7]), Categorical(logits=logits[:, 7:])
    expected = first.log_prob(actions[:, 0].long()) + box.log_prob(actions[:, 1:3]).sum(-1)
    expected = expected + last.log_prob(actions[:, 3].long())
    torch.testing.assert_close(dist.log_prob(actions), expected)
    torch.testing.assert_close(dist.entropy(), first.entropy() + box.entropy().sum(-1) + last.entropy())

    sampled_actions, sampled_log_probs = dist.sample_actions_log_probs()
    torch.testing.assert_close(sampled_log_probs, dist.log_prob(sampled_actions))
    with pytest.raises(NotImplementedError):
        dist.symmetric_kl_with_uniform_prior()


def test_multidiscrete_is_a_tuple_of_categoricals():
    space = gym.spaces.MultiDiscrete([3, 5])
    logits, other_logits = torch.randn(BATCH, 8), torch.randn(BATCH, 8)
    dist, other = get_action_distribution(space, logits), get_action_distribution(space, other_logits)
    actions = dist.sample()
    assert actions.shape == (BATCH, 2) and actions.dtype == torch.int64
    assert torch.all(actions[:, 0] < 3) and torch.all(actions[:, 1] < 5)
    parts = [Categorical(logits=logits[:, :3]), Categorical(logits=logits[:, 3:])]
    other_parts = [Categorical(logits=other_logits[:, :3]), Categorical(logits=other_logits[:, 3:])]
    torch.testing.assert_close(
        dist.log_prob(actions), parts[0].log_prob(actions[:, 0]) + parts[1].log_prob(actions[:, 1])
    )
    expected_kl = sum(kl_divergence(p, q) for p, q in zip(parts, other_parts, strict=True))
    torch.testing.assert_close(dist.kl_divergence(other), expected_kl)
    torch.testing.assert_close(
        argmax_actions(dist), torch.stack([logits[:, :3].argmax(-1), logits[:, 3:].argmax(-1)], 1)
    )


def test_tuple_mask_is_split_over_discrete_components():
    space = gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(-1, 1, (1,)), gym.spaces.Discrete(3)])
    mask = torch.tensor([1, 0, 0, 1, 1]).expand(5000, 5)  # Discrete(2) allows 0; Discrete(3) forbids 0
    actions = get_action_distribution(space, torch.zeros(5000, 2 + 2 + 3), mask).sample()
    assert torch.all(actions[:, 0] == 0)
    assert torch.all(actions[:, 2] != 0)


@pytest.mark.parametrize(
    ("space", "num_parameters", "num_actions", "continuous"),
    [
        (gym.spaces.Discrete(7), 7, 1, False),
        (Discretized(5, -1.0, 1.0), 5, 1, False),
        (gym.spaces.Box(-1, 1, (4,)), 8, 4, True),
        (gym.spaces.Box(-1, 1, (2, 3)), 12, 6, True),
        (gym.spaces.MultiDiscrete([2, 3, 4]), 9, 3, False),
        (gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,))]), 7, 3, False),
    ],
)
def test_space_sizes(space: gym.Space, num_parameters: int, num_actions: int, continuous: bool):
    assert calc_num_action_parameters(space) == num_parameters
    assert calc_num_actions(space) == num_actions
    assert is_continuous_action_space(space) is continuous


def test_discretized_maps_to_evenly_spaced_values():
    space = Discretized(5, -1.0, 1.0)
    assert space.to_continuous(0) == -1.0 and space.to_continuous(4) == 1.0
    np.testing.assert_allclose(space.to_continuous(np.arange(5)), [-1.0, -0.5, 0.0, 0.5, 1.0])
    assert space.contains(3) and not space.contains(5)
    assert space != Discretized(5, -2.0, 1.0)


def test_unsupported_space_names_itself():
    with pytest.raises(NotImplementedError, match="MultiBinary"):
        calc_num_action_parameters(gym.spaces.MultiBinary(3))


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Discrete(5),
        gym.spaces.Box(-1, 1, (3,), np.float32),
        gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,), np.float32)]),
        gym.spaces.MultiDiscrete([2, 4]),
    ],
)
def test_sample_actions_log_probs_function_scores_its_own_samples(space: gym.Space):
    torch.manual_seed(0)
    distribution = get_action_distribution(space, torch.randn(BATCH, calc_num_action_parameters(space)))
    actions, log_probs = sample_actions_log_probs(distribution)
    assert log_probs.shape == (BATCH,)
    assert actions.shape == (BATCH, calc_num_actions(space))
    torch.testing.assert_close(log_probs, distribution.log_prob(actions))
    assert torch.all(log_probs <= 0) or not isinstance(space, gym.spaces.Discrete)


def test_gumbel_max_samples_follow_probabilities():
    probs = torch.tensor([0.1, 0.6, 0.3])
    dist = CategoricalActionDistribution(probs.log().expand(20000, 3))
    actions = dist.sample_gumbel()
    assert actions.shape == (20000, 1) and actions.dtype == torch.int64
    frequencies = torch.bincount(actions.squeeze(-1), minlength=3).float() / 20000
    torch.testing.assert_close(frequencies, probs, atol=0.02, rtol=0)


def test_categorical_log_prob_of_several_actions_per_row():
    """``[B, k]`` actions are k actions scored against their row's distribution (``[B, k]`` out)."""
    logits = torch.tensor([[0.0, 1.0, 2.0], [2.0, 0.0, 0.0]])
    dist = CategoricalActionDistribution(logits)
    every_action = torch.tensor([[0, 1, 2], [0, 1, 2]])
    torch.testing.assert_close(dist.log_prob(every_action), torch.log_softmax(logits, -1))
    assert dist.log_prob(torch.tensor([[2], [0]])).shape == (2,)
    assert dist.log_prob(torch.tensor([2, 0])).shape == (2,)


@pytest.mark.parametrize(
    ("space", "buffer_shape"),
    [
        (gym.spaces.Discrete(4), (BATCH,)),
        (gym.spaces.Box(-1, 1, (1,)), (BATCH, 1)),
        (gym.spaces.Box(-1, 1, (3,)), (BATCH, 3)),
        (gym.spaces.MultiDiscrete([2, 3]), (BATCH, 2)),
    ],
)
def test_buffer_actions_drop_only_the_discrete_column(space: gym.Space, buffer_shape: tuple[int, ...]):
    distribution = get_action_distribution(space, torch.randn(BATCH, calc_num_action_parameters(space)))
    actions = distribution.sample()
    stored = buffer_actions(distribution, actions)
    assert stored.shape == buffer_shape
    torch.testing.assert_close(distribution.log_prob(stored), distribution.log_prob(actions))


def test_tuple_mask_may_be_stacked_along_the_batch():
    """Masks of equal-width components may come as ``[k * B, n]``: component j's mask in rows j*B..(j+1)*B."""
    space = gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Discrete(3)])
    batch = 2000
    first = torch.tensor([1, 0, 0]).expand(batch, 3)  # first component: only action 0
    second = torch.tensor([0, 1, 1]).expand(batch, 3)  # second component: never action 0
    actions = get_action_distribution(space, torch.zeros(batch, 6), torch.cat([first, second])).sample()
    assert torch.all(actions[:, 0] == 0) and torch.all(actions[:, 1] != 0)
    side_by_side = get_action_distribution(space, torch.zeros(batch, 6), torch.cat([first, second], dim=1))
    assert torch.all(side_by_side.sample()[:, 0] == 0)


def test_tuple_mask_of_a_wrong_shape_names_the_accepted_ones():
    space = gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Discrete(2)])
    with pytest.raises(ValueError, match=r"\[batch, 5\]"):
        get_action_distribution(space, torch.zeros(4, 5), torch.ones(4, 3))
