"""Action masks for every discrete action space: a forbidden action is never sampled, and the entropy, the
log-probabilities and the KL are those of the distribution restricted to the allowed actions."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from torch.distributions import Categorical, kl_divergence

from sample_factory.model.action_distributions import calc_num_action_parameters, get_action_distribution
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.model_utils import get_rnn_size

NUM_SAMPLES = 100_000
SPACES = {
    "discrete": gym.spaces.Discrete(5),
    "multi_discrete": gym.spaces.MultiDiscrete([3, 4, 2]),
    "tuple": gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Discrete(4)]),
    "tuple_with_box": gym.spaces.Tuple([gym.spaces.Discrete(4), gym.spaces.Box(-1.0, 1.0, (2,))]),
}


def _widths(space: gym.Space) -> list[int]:
    """The number of choices of each discrete component, in the mask's order."""
    if isinstance(space, gym.spaces.Discrete):
        return [int(space.n)]
    if isinstance(space, gym.spaces.MultiDiscrete):
        return [int(n) for n in space.nvec]
    return [w for sub in space.spaces if not isinstance(sub, gym.spaces.Box) for w in _widths(sub)]


def _random_mask(widths: list[int], batch: int, gen: torch.Generator) -> torch.Tensor:
    """[batch, sum(widths)] 0/1 masks, each component with at least one allowed and (mostly) some forbidden."""
    parts = []
    for n in widths:
        part = (torch.rand(batch, n, generator=gen) < 0.5).float()
        first_allowed = torch.randint(0, n, (batch,), generator=gen)
        part[torch.arange(batch), first_allowed] = 1.0
        parts.append(part)
    return torch.cat(parts, dim=1)


def _discrete_columns(space: gym.Space, actions: torch.Tensor) -> list[torch.Tensor]:
    """The sampled index of each discrete component ([B] each), in the mask's order."""
    actions = actions.reshape(actions.shape[0], -1)
    if not isinstance(space, gym.spaces.Tuple):
        return [actions[:, k].long() for k in range(actions.shape[1])]
    columns, start = [], 0
    for sub in space.spaces:
        width = 2 if isinstance(sub, gym.spaces.Box) else 1
        if width == 1:
            columns.append(actions[:, start].long())
        start += width
    return columns


def _count_forbidden(space: gym.Space, actions: torch.Tensor, mask: torch.Tensor) -> int:
    forbidden, offset = 0, 0
    for n, column in zip(_widths(space), _discrete_columns(space, actions), strict=True):
        allowed = mask[:, offset : offset + n].gather(1, column.unsqueeze(1)).squeeze(1)
        forbidden += int((allowed == 0).sum())
        offset += n
    return forbidden


@pytest.mark.parametrize("name", SPACES)
def test_no_forbidden_action_in_100k_samples(name: str):
    space = SPACES[name]
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(NUM_SAMPLES, calc_num_action_parameters(space), generator=gen) * 3
    mask = _random_mask(_widths(space), NUM_SAMPLES, gen)
    distribution = get_action_distribution(space, logits, mask)
    actions = distribution.sample()
    assert _count_forbidden(space, actions, mask) == 0
    assert mask.min() == 0  # the masks did forbid actions
    assert torch.isfinite(distribution.log_prob(actions)).all()
    if name == "discrete":
        assert _count_forbidden(space, distribution.sample_gumbel(), mask) == 0


@pytest.mark.parametrize("name", [name for name in SPACES if name != "discrete"])  # tuples and MultiDiscrete
def test_the_autoregressive_head_never_samples_a_forbidden_action(name: str, make_cfg):
    space = SPACES[name]
    cfg = make_cfg(action_head="autoregressive", use_rnn=False, normalize_input=False)
    model = create_actor_critic(cfg, gym.spaces.Box(-1.0, 1.0, (3,)), space).eval()
    gen = torch.Generator().manual_seed(2)
    obs = torch.randn(NUM_SAMPLES, 3, generator=gen)
    mask = _random_mask(_widths(space), NUM_SAMPLES, gen)
    with torch.no_grad():
        out = model({"obs": obs}, torch.zeros(NUM_SAMPLES, get_rnn_size(cfg)), action_mask=mask)
    assert _count_forbidden(space, out["actions"], mask) == 0


def _allowed_only(logits: torch.Tensor, mask: torch.Tensor) -> Categorical:
    """The reference: a categorical over the allowed actions alone (forbidden logits pushed to -inf)."""
    return Categorical(logits=logits.masked_fill(mask == 0, float("-inf")))


def test_entropy_log_probs_and_kl_cover_only_allowed_actions():
    space = gym.spaces.MultiDiscrete([4, 3])
    gen = torch.Generator().manual_seed(3)
    batch = 256
    logits, other_logits = torch.randn(batch, 7, generator=gen), torch.randn(batch, 7, generator=gen)
    mask = _random_mask([4, 3], batch, gen)
    distribution = get_action_distribution(space, logits, mask)
    other = get_action_distribution(space, other_logits, mask)
    actions = distribution.sample()
    references = [
        (_allowed_only(logits[:, a:b], mask[:, a:b]), _allowed_only(other_logits[:, a:b], mask[:, a:b]))
        for a, b in ((0, 4), (4, 7))
    ]
    entropy = sum(reference.entropy() for reference, _ in references)
    log_prob = sum(reference.log_prob(actions[:, k]) for k, (reference, _) in enumerate(references))
    kl = sum(kl_divergence(reference, reference_other) for reference, reference_other in references)
    torch.testing.assert_close(distribution.entropy(), entropy)
    torch.testing.assert_close(distribution.log_prob(actions), log_prob)
    torch.testing.assert_close(distribution.kl_divergence(other), kl)


def test_allowed_probabilities_sum_to_one_and_forbidden_ones_are_zero():
    gen = torch.Generator().manual_seed(4)
    logits = torch.randn(64, 6, generator=gen) * 5
    mask = _random_mask([6], 64, gen)
    distribution = get_action_distribution(gym.spaces.Discrete(6), logits, mask)
    probs = distribution.probs
    assert torch.all(probs[mask == 0] == 0)
    torch.testing.assert_close(probs.sum(dim=1), torch.ones(64))
    every_action = torch.arange(6).expand(64, 6)
    log_probs = distribution.log_prob(every_action)  # [B, 6]: every action scored against each row
    assert torch.all(log_probs[mask == 0] < -1e30)
    torch.testing.assert_close(log_probs.exp().sum(dim=1), torch.ones(64))
