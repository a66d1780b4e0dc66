"""The learner with the autoregressive head and with a registered action distribution: on trajectories its own model
sampled, the ratio is 1 and the KL 0 before any update (the stored logits and the teacher-forced re-evaluation
agree); training then moves the policy (KL > 0) with finite stats, and the learner builds the behaviour
distribution of the KL through the registry."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from test_learner import OBS_DIM, _single_torch_thread, make_cfg, make_learner, make_trajectories  # noqa: F401 (fixture)

from sample_factory.algo.utils.context import reset_global_context
from sample_factory.envs.spaces.layout import as_tuple_space
from sample_factory.model.action_distributions import (
    CategoricalActionDistribution,
    calc_num_action_parameters,
    register_action_distribution,
)
from sample_factory.model.autoregressive_head import AutoregressiveActionDistribution
from sample_factory.utils.tensor_dict import TensorDict

MULTI_DISCRETE = gym.spaces.MultiDiscrete([3, 4])


@pytest.fixture(autouse=True)
def _fresh_registry():
    reset_global_context()
    yield
    reset_global_context()


def _sampled_by_the_model(learner, trajectories: TensorDict) -> TensorDict:
    """Replace the random actions, log-probs and logits by what the learner's own policy samples on the
    observations (the inference worker's outputs at policy lag 0)."""
    model, n, t = learner.actor_critic, *trajectories["dones"].shape
    obs = trajectories["obs"]["obs"][:, :t].reshape(n * t, OBS_DIM)
    with torch.no_grad():
        model.eval()
        out = model(model.normalize_obs({"obs": obs}), torch.zeros(n * t, trajectories["rnn_states"].shape[-1]))
        model.train()
    trajectories["actions"] = out["actions"].reshape(n, t, *out["actions"].shape[1:])  # the buffers' dtype
    trajectories["log_prob_actions"] = out["log_prob_actions"].reshape(n, t)
    trajectories["action_logits"] = out["action_logits"].reshape(n, t, -1)
    return trajectories


def _learner_and_batch(action_space: gym.Space, **overrides):
    cfg = make_cfg(use_rnn=False, recurrence=1, normalize_input=False, **overrides)
    learner = make_learner(cfg, action_space)
    trajectories = make_trajectories(cfg, action_space=as_tuple_space(action_space))  # actions replaced below
    num_parameters = calc_num_action_parameters(action_space, cfg.action_distribution)
    trajectories["action_logits"] = torch.zeros(*trajectories["dones"].shape, num_parameters)
    return learner, _sampled_by_the_model(learner, trajectories)


def test_autoregressive_head_has_no_kl_before_updating_and_trains():
    learner, trajectories = _learner_and_batch(MULTI_DISCRETE, action_head="autoregressive", learning_rate=0.0)
    stats = learner.train(learner.prepare_batch(trajectories))
    assert isinstance(learner.actor_critic.action_distribution(), AutoregressiveActionDistribution)
    assert abs(stats["kl_divergence"]) < 1e-6
    assert stats["grad_norm"] > 0
    learner, trajectories = _learner_and_batch(
        MULTI_DISCRETE, action_head="autoregressive", learning_rate=1e-2, num_epochs=3, kl_loss_coeff=0.1
    )
    stats = learner.train(learner.prepare_batch(trajectories))
    assert all(torch.isfinite(torch.tensor(value)) for value in stats.values())
    assert stats["kl_divergence"] > 1e-5


class CountingCategorical(CategoricalActionDistribution):
    """A registered distribution that counts the calls the learner makes (class-wide)."""

    calls: dict[str, int] = {}

    def __init__(self, action_space, raw_logits, action_mask=None) -> None:
        super().__init__(raw_logits[:, :-1] * 2.0, action_mask)  # one spare parameter: a layout of its own

    def log_prob(self, actions):
        CountingCategorical.calls["log_prob"] = CountingCategorical.calls.get("log_prob", 0) + 1
        return super().log_prob(actions)

    def kl_divergence(self, other):
        assert isinstance(other, CountingCategorical)
        CountingCategorical.calls["kl_divergence"] = CountingCategorical.calls.get("kl_divergence", 0) + 1
        return super().kl_divergence(other)


def test_the_learner_uses_a_registered_distribution_for_log_probs_and_kl():
    CountingCategorical.calls = {}
    register_action_distribution("counting", CountingCategorical, lambda space: int(space.n) + 1)
    learner, trajectories = _learner_and_batch(gym.spaces.Discrete(3), action_distribution="counting")
    assert trajectories["action_logits"].shape[-1] == 4
    stats = learner.train(learner.prepare_batch(trajectories))
    assert CountingCategorical.calls["log_prob"] >= 2 and CountingCategorical.calls["kl_divergence"] >= 2
    assert all(torch.isfinite(torch.tensor(value)) for value in stats.values())
