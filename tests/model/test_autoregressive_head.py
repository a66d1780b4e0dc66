"""The autoregressive head: a proper joint distribution, sampled as it scores, consistent between sampling (what the
inference worker stores) and teacher forcing (what the learner computes), with chain-rule entropy and KL."""

from __future__ import annotations

import itertools
import types

import gymnasium as gym
import pytest
import torch

from sample_factory.cfg.arguments import default_cfg
from sample_factory.cfg.validation import env_problems
from sample_factory.envs.spaces.layout import autoregressive_sub_spaces
from sample_factory.model.action_distributions import (
    TupleActionDistribution,
    argmax_actions,
    calc_num_action_parameters,
    get_action_distribution,
)
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.autoregressive_head import (
    ActionParameterizationAutoregressive,
    AutoregressiveActionDistribution,
)
from sample_factory.model.model_utils import get_rnn_size

OBS = gym.spaces.Box(-1.0, 1.0, (5,))
MULTI_DISCRETE = gym.spaces.MultiDiscrete([3, 4])
MIXED = gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2)])


@pytest.fixture(autouse=True, scope="module")
def _single_torch_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy shared CPU threads make them much slower."""
    num_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(num_threads)


def _model(make_cfg, space: gym.Space, **overrides):
    cfg = make_cfg(action_head="autoregressive", use_rnn=False, normalize_input=False, **overrides)
    return create_actor_critic(cfg, OBS, space).eval()


def _core(model, batch: int, seed: int = 0) -> torch.Tensor:
    obs = torch.randn(batch, 5, generator=torch.Generator().manual_seed(seed))
    head = model.forward_head({"obs": obs})
    core, _ = model.forward_core(head, torch.zeros(batch, get_rnn_size(model.cfg)))
    return core


def _distribution(model, core: torch.Tensor) -> AutoregressiveActionDistribution:
    model.forward_tail(core, values_only=False, sample_actions=False)
    return model.action_distribution()


def _all_actions(space: gym.spaces.MultiDiscrete) -> torch.Tensor:
    return torch.tensor(list(itertools.product(*(range(int(n)) for n in space.nvec))))


@pytest.mark.parametrize("space", [MULTI_DISCRETE, MIXED], ids=["multi_discrete", "tuple_discrete_box"])
def test_stored_logits_and_teacher_forcing_reproduce_the_sampled_log_probs(make_cfg, space):
    model = _model(make_cfg, space)
    assert isinstance(model.action_parameterization, ActionParameterizationAutoregressive)
    batch = 32
    with torch.no_grad():
        core = _core(model, batch)
        out = model.forward_tail(core, values_only=False, sample_actions=True)
        assert out["action_logits"].shape == (batch, calc_num_action_parameters(space))
        # the learner's behaviour distribution: the stored conditionals read back as a factorized tuple
        behaviour = get_action_distribution(space, out["action_logits"])
        assert isinstance(behaviour, TupleActionDistribution)
        torch.testing.assert_close(behaviour.log_prob(out["actions"]), out["log_prob_actions"])
        # the learner's current policy: teacher forcing on the taken actions, from the same core output
        current = _distribution(model, core)
        torch.testing.assert_close(current.log_prob(out["actions"]), out["log_prob_actions"])
        torch.testing.assert_close(behaviour.kl_divergence(current), torch.zeros(batch), atol=1e-6, rtol=0)


def test_the_joint_distribution_sums_to_one_and_sampling_follows_it(make_cfg):
    model = _model(make_cfg, MULTI_DISCRETE)
    every = _all_actions(MULTI_DISCRETE)  # [12, 2]
    with torch.no_grad():
        core = _core(model, 1).expand(len(every), -1)
        joint = _distribution(model, core).log_prob(every).exp()  # p(a1) p(a2 | a1) for every pair
        torch.testing.assert_close(joint.sum(), torch.tensor(1.0))
        num_samples = 40_000
        samples = _distribution(model, _core(model, 1).expand(num_samples, -1)).sample()
    codes = samples[:, 0] * 4 + samples[:, 1]
    frequencies = torch.bincount(codes, minlength=12).float() / num_samples
    torch.testing.assert_close(frequencies, joint, atol=0.012, rtol=0)  # ~4 binomial standard deviations


def test_chain_rule_entropy_and_kl_estimate_the_joint_ones(make_cfg):
    """Averaged over prefixes drawn from the policy, the sums of conditional entropies / KLs along the prefix are the
    joint entropy / KL (computed here exactly by enumerating every action)."""
    old_model = _model(make_cfg, MULTI_DISCRETE)
    new_model = _model(make_cfg, MULTI_DISCRETE)
    every = _all_actions(MULTI_DISCRETE)
    num_samples = 50_000
    with torch.no_grad():
        core = _core(old_model, 1)
        old_joint = _distribution(old_model, core.expand(12, -1)).log_prob(every)
        new_joint = _distribution(new_model, core.expand(12, -1)).log_prob(every)
        exact_entropy = -(old_joint.exp() * old_joint).sum()
        exact_kl = (old_joint.exp() * (old_joint - new_joint)).sum()
        out = old_model.forward_tail(core.expand(num_samples, -1), values_only=False, sample_actions=True)
        sampled = old_model.action_distribution()
        entropy_estimate = sampled.entropy().mean()
        behaviour = get_action_distribution(MULTI_DISCRETE, out["action_logits"])
        current = _distribution(new_model, core.expand(num_samples, -1))
        current.log_prob(out["actions"])  # teacher forcing, as the learner does before its KL
        kl_estimate = behaviour.kl_divergence(current).mean()
    assert exact_kl > 0.01  # two different random heads
    torch.testing.assert_close(entropy_estimate, exact_entropy, atol=0.02, rtol=0)
    torch.testing.assert_close(kl_estimate, exact_kl, atol=0.02, rtol=0.05)


def test_argmax_is_greedy_decoding(make_cfg):
    model = _model(make_cfg, MULTI_DISCRETE)
    every = _all_actions(MULTI_DISCRETE)
    with torch.no_grad():
        core = _core(model, 6)
        greedy = argmax_actions(_distribution(model, core))
        for row in range(6):
            first = _distribution(model, core[row : row + 1].expand(12, -1)).log_prob(every)
            # the first sub-action's marginal, then the best second sub-action given it
            marginal = first.exp().reshape(3, 4).sum(dim=1)
            best_first = int(marginal.argmax())
            conditional = first.reshape(3, 4)[best_first]
            assert greedy[row].tolist() == [best_first, int(conditional.argmax())]


def test_the_head_learns_sub_actions_that_must_agree_and_the_factorized_one_cannot(make_cfg):
    """Maximum likelihood of the pairs (i, i), i uniform: the chain rule fits them (P(a1 == a2) -> 1); a factorized
    head's best fit is uniform marginals, P(a1 == a2) = 1/n."""
    n = 4
    space = gym.spaces.MultiDiscrete([n, n])
    pairs = torch.arange(n).repeat(64).unsqueeze(1).expand(-1, 2)  # [4 * 64, 2]
    agreement = {}
    for head in ("autoregressive", "factorized"):
        torch.manual_seed(0)
        cfg = make_cfg(action_head=head, use_rnn=False, normalize_input=False)
        model = create_actor_critic(cfg, OBS, space)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        core = _core(model, 1).detach().expand(len(pairs), -1)
        for _ in range(150):
            model.forward_tail(core, values_only=False, sample_actions=False)
            loss = -model.action_distribution().log_prob(pairs).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            every = _all_actions(space)
            model.forward_tail(core[:1].expand(len(every), -1), values_only=False, sample_actions=False)
            joint = model.action_distribution().log_prob(every).exp()
            agreement[head] = float(joint[every[:, 0] == every[:, 1]].sum())
    assert agreement["autoregressive"] > 0.95
    assert agreement["factorized"] < 1 / n + 0.02


def test_symmetric_kl_exploration_term_is_a_sum_over_sub_actions(make_cfg):
    model = _model(make_cfg, MULTI_DISCRETE)
    with torch.no_grad():
        distribution = _distribution(model, _core(model, 8))
        terms = distribution.symmetric_kl_with_uniform_prior()
        expected = sum(c.symmetric_kl_with_uniform_prior() for c in distribution.components)
    torch.testing.assert_close(terms, expected)
    assert torch.all(terms > 0)


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Discrete(4),
        gym.spaces.Box(-1.0, 1.0, (2,)),
        gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Tuple([gym.spaces.Discrete(2)])]),
    ],
    ids=["discrete", "box", "nested_tuple"],
)
def test_spaces_without_sub_actions_to_chain_are_refused_naming_the_fix(make_cfg, space):
    with pytest.raises(ValueError, match="--action_head=factorized"):
        autoregressive_sub_spaces(space)
    cfg = make_cfg(action_head="autoregressive")
    problems = env_problems(_full_cfg(cfg), _env_info(space))
    assert any("--action_head=factorized" in problem for problem in problems)


def test_a_named_distribution_cannot_be_combined_with_the_autoregressive_head(make_cfg):
    cfg = _full_cfg(make_cfg(action_head="autoregressive", action_distribution="my_distribution"))
    problems = env_problems(cfg, _env_info(MULTI_DISCRETE))
    assert any("--action_distribution=my_distribution cannot apply" in problem for problem in problems)


def _full_cfg(model_cfg):
    cfg = default_cfg()
    for key, value in model_cfg.items():
        setattr(cfg, key, value)
    return cfg


def _env_info(action_space: gym.Space):
    return types.SimpleNamespace(obs_space=OBS, action_space=action_space, num_agents=1, is_multiagent=False)
