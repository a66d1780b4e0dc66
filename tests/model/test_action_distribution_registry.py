"""Action distributions registered on the model factory, by space type or by name, replace the built-in ones
wherever a distribution is made: ``get_action_distribution``, the parameter count, the model's head, enjoy's
deterministic step and the registry copy that worker processes receive."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest
import torch

from sample_factory.algo.sampling.evaluation_episodes import policy_step
from sample_factory.algo.utils.context import SampleFactoryContext, global_model_factory, sf_global_context
from sample_factory.model.action_distributions import (
    CategoricalActionDistribution,
    ContinuousActionDistribution,
    TupleActionDistribution,
    argmax_actions,
    calc_num_action_parameters,
    get_action_distribution,
    register_action_distribution,
)
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.model_utils import get_rnn_size

OBS = gym.spaces.Box(-1.0, 1.0, (4,))


class TemperedCategorical(CategoricalActionDistribution):
    """A categorical whose last raw parameter is a log-temperature: one parameter more than the built-in layout."""

    def __init__(self, action_space: gym.spaces.Discrete, raw_logits: torch.Tensor, action_mask=None) -> None:
        logits, log_temperature = raw_logits[:, :-1], raw_logits[:, -1:]
        super().__init__(logits / log_temperature.exp(), action_mask)


def tempered_parameters(action_space: gym.spaces.Discrete) -> int:
    return int(action_space.n) + 1


class FixedStdGaussian(ContinuousActionDistribution):
    """Means only, a fixed std of 0.5: half the built-in Gaussian's parameters."""

    def __init__(self, action_space: gym.spaces.Box, raw_params: torch.Tensor, action_mask=None) -> None:
        log_stds = torch.full_like(raw_params, -0.6931)
        super().__init__(torch.cat([raw_params, log_stds], dim=1))


def box_means_only(action_space: gym.spaces.Box) -> int:
    return int(action_space.shape[0])


class NoArgmax:
    def __init__(self, action_space, raw_logits, action_mask=None) -> None:
        self.inner = CategoricalActionDistribution(raw_logits, action_mask)


def test_a_distribution_registered_for_a_space_type_replaces_the_built_in_one_everywhere():
    box = gym.spaces.Box(-1.0, 1.0, (3,))
    register_action_distribution(gym.spaces.Box, FixedStdGaussian, box_means_only)
    assert calc_num_action_parameters(box) == 3
    distribution = get_action_distribution(box, torch.zeros(8, 3))
    assert isinstance(distribution, FixedStdGaussian)
    torch.testing.assert_close(distribution.stds, torch.full((8, 3), 0.5), rtol=1e-3, atol=0)
    # as a component of a tuple too: the tuple's layout counts the registered width
    space = gym.spaces.Tuple([gym.spaces.Discrete(2), box])
    assert calc_num_action_parameters(space) == 2 + 3
    tuple_distribution = get_action_distribution(space, torch.zeros(8, 5))
    assert isinstance(tuple_distribution, TupleActionDistribution)
    assert isinstance(tuple_distribution.components[1], FixedStdGaussian)
    assert tuple_distribution.sample().shape == (8, 4)


def test_a_subclass_space_finds_the_distribution_of_its_base_class():
    class MySpace(gym.spaces.Discrete):
        pass

    register_action_distribution(gym.spaces.Discrete, TemperedCategorical, tempered_parameters)
    assert calc_num_action_parameters(MySpace(4)) == 5
    assert isinstance(get_action_distribution(MySpace(4), torch.zeros(2, 5)), TemperedCategorical)


def test_a_named_distribution_is_used_only_when_selected():
    space = gym.spaces.Discrete(3)
    global_model_factory().register_action_distribution("tempered", TemperedCategorical, tempered_parameters)
    assert calc_num_action_parameters(space) == 3
    assert type(get_action_distribution(space, torch.zeros(2, 3))) is CategoricalActionDistribution
    assert calc_num_action_parameters(space, "tempered") == 4
    assert calc_num_action_parameters(space, "default") == 3
    assert isinstance(get_action_distribution(space, torch.zeros(2, 4), name="tempered"), TemperedCategorical)


def test_bad_registrations_and_unknown_names_are_refused_with_the_fix():
    factory = global_model_factory()
    with pytest.raises(ValueError, match="means the built-in one"):
        factory.register_action_distribution("default", TemperedCategorical)
    with pytest.raises(TypeError, match="gymnasium.spaces.Space subclass"):
        factory.register_action_distribution(int, TemperedCategorical)
    with pytest.raises(TypeError, match="needs a callable"):
        factory.register_action_distribution("x", "not a function")
    factory.register_action_distribution("tempered", TemperedCategorical, tempered_parameters)
    with pytest.raises(
        KeyError, match=r"--action_distribution=typo is not registered \(registered names: \['tempered'"
    ):
        get_action_distribution(gym.spaces.Discrete(2), torch.zeros(1, 2), name="typo")


def test_the_model_and_enjoy_use_the_named_distribution(make_cfg):
    register_action_distribution("tempered", TemperedCategorical, tempered_parameters)
    cfg = make_cfg(action_distribution="tempered", use_rnn=False)
    model = create_actor_critic(cfg, OBS, gym.spaces.Discrete(3)).eval()
    obs, rnn_states = {"obs": torch.randn(6, 4)}, torch.zeros(6, get_rnn_size(cfg))
    with torch.no_grad():
        out = model(model.normalize_obs(obs), rnn_states)
    assert out["action_logits"].shape == (6, 4)
    distribution = model.action_distribution()
    assert isinstance(distribution, TemperedCategorical)
    torch.testing.assert_close(distribution.log_prob(out["actions"]), out["log_prob_actions"])
    actions, _ = policy_step(model, obs, rnn_states, deterministic=True)
    torch.testing.assert_close(actions, argmax_actions(model.action_distribution()))


def test_deterministic_evaluation_of_a_distribution_without_argmax_names_what_is_missing():
    register_action_distribution("no_argmax", NoArgmax)
    distribution = get_action_distribution(gym.spaces.Discrete(2), torch.zeros(1, 2), name="no_argmax")
    with pytest.raises(TypeError, match=r"NoArgmax has no argmax\(\).*--eval_deterministic=True"):
        argmax_actions(distribution)


def test_registrations_travel_with_the_context_that_worker_processes_receive():
    register_action_distribution("tempered", TemperedCategorical, tempered_parameters)
    register_action_distribution(gym.spaces.Box, FixedStdGaussian, box_means_only)
    copy: SampleFactoryContext = pickle.loads(pickle.dumps(sf_global_context()))
    entries = copy.model_factory.action_distributions
    assert entries["tempered"].make is TemperedCategorical
    assert entries[gym.spaces.Box].num_parameters is box_means_only
