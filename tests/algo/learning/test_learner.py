"""Learner: batch preparation, exact BPTT, losses, masking, V-trace, learning-rate schedules and checkpoints.

Everything runs in-process on the CPU with tiny models on small synthetic batches that follow the sampler's
trajectory contract (``[N, T+1]`` observations and RNN states, ``[N, T]`` for everything else).
"""

from __future__ import annotations

import copy
import functools
import io
import types

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import Tensor

from sample_factory.algo.learning import learner as learner_module
from sample_factory.algo.learning.batch_preparation import normalizers_mode
from sample_factory.algo.learning.learner import Learner
from sample_factory.algo.learning.losses import normalize_advantages
from sample_factory.algo.learning.lr_schedule import kl_adaptive_lr
from sample_factory.algo.learning.minibatches import Minibatch, minibatch_indices
from sample_factory.algo.learning.training_stats import ReportedSamples, reported_stats
from sample_factory.algo.utils.model_sharing import ParameterServer
from sample_factory.algo.utils.rl_utils import vtrace
from sample_factory.cfg.arguments import default_cfg
from sample_factory.model.action_distributions import calc_num_action_parameters, calc_num_actions
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.torch_utils import ValidMean

OBS_DIM = 4
DISCRETE = gym.spaces.Discrete(3)


@pytest.fixture(autouse=True, scope="module")
def _single_torch_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy shared CPU threads make them much slower."""
    num_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(num_threads)


@functools.lru_cache(maxsize=1)
def _base_cfg():
    return default_cfg(env="learner_test")


def make_cfg(**overrides):
    """A tiny, fast configuration: 2 trajectories of 8 steps per minibatch, recurrence 4."""
    cfg = copy.deepcopy(_base_cfg())
    settings = dict(
        device="cpu", encoder_mlp_layers=[16], rnn_size=8, rollout=8, recurrence=4, batch_size=16,
        num_batches_per_epoch=2, num_epochs=1, learning_rate=1e-3, shuffle_minibatches=False,
    )  # fmt: skip
    settings.update(overrides)
    for key, value in settings.items():
        setattr(cfg, key, value)
    return cfg


def make_env_info(action_space: gym.Space = DISCRETE) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        obs_space=gym.spaces.Box(-10.0, 10.0, (OBS_DIM,)), action_space=action_space, num_agents=1, frameskip=1
    )


def make_learner(cfg, action_space: gym.Space = DISCRETE, seed: int = 0) -> Learner:
    torch.manual_seed(seed)
    learner = Learner(cfg, make_env_info(action_space))
    learner.init()
    return learner


def random_actions(action_space: gym.Space, shape: tuple[int, int], gen: torch.Generator) -> Tensor:
    if isinstance(action_space, gym.spaces.Discrete):
        return torch.randint(0, int(action_space.n), shape, generator=gen)
    if isinstance(action_space, gym.spaces.Box):
        return torch.randn(*shape, calc_num_actions(action_space), generator=gen)
    columns = [random_actions(space, shape, gen).float().reshape(*shape, -1) for space in action_space.spaces]
    return torch.cat(columns, dim=-1)


def make_trajectories(
    cfg, num_trajectories: int = 4, action_space: gym.Space = DISCRETE, seed: int = 1, done_prob: float = 0.25
) -> TensorDict:
    """Random trajectories in the sampler's layout, with episode ends scattered inside segments."""
    gen = torch.Generator().manual_seed(seed)
    n, t = num_trajectories, cfg.rollout
    dones = (torch.rand(n, t, generator=gen) < done_prob).float()
    rnn_states = torch.randn(n, t + 1, get_rnn_size(cfg), generator=gen)
    rnn_states[:, 1:] *= 1.0 - dones.unsqueeze(-1)  # zero state after an episode end, as the sampler stores it
    return TensorDict(
        obs=TensorDict(obs=torch.randn(n, t + 1, OBS_DIM, generator=gen) * 3 + 1),
        rnn_states=rnn_states,
        actions=random_actions(action_space, (n, t), gen),
        log_prob_actions=-torch.rand(n, t, generator=gen) - 0.5,
        action_logits=torch.randn(n, t, calc_num_action_parameters(action_space), generator=gen),
        values=torch.randn(n, t, generator=gen),
        rewards=torch.randn(n, t, generator=gen),
        dones=dones,
        time_outs=dones * (torch.rand(n, t, generator=gen) < 0.5).float(),
        valids=torch.ones(n, t, dtype=torch.bool),
        policy_version=torch.zeros(n, t, dtype=torch.int64),
    )


def step_by_step_outputs(learner: Learner, batch: TensorDict) -> tuple[Tensor, Tensor]:
    """Reference values and log-probs: the core run one step at a time per segment, reset to zero after dones."""
    ac, recurrence = learner.actor_critic, learner.recurrence
    values, log_probs = [], []
    with torch.no_grad():
        for start in range(0, batch["dones"].shape[0], recurrence):
            state = batch["rnn_states"][start : start + 1]
            for i in range(start, start + recurrence):
                if i > start and batch["dones"][i - 1] > 0:
                    state = torch.zeros_like(state)
                head = ac.forward_head({key: x[i : i + 1] for key, x in batch["obs"].items()})
                core, state = ac.forward_core(head, state)
                tail = ac.forward_tail(core, values_only=False, sample_actions=False)
                values.append(tail["values"])
                log_probs.append(ac.action_distribution().log_prob(batch["actions"][i : i + 1]))
    return torch.cat(values), torch.cat(log_probs)


def grads(learner: Learner) -> list[Tensor]:
    return [p.grad.clone() for p in learner.actor_critic.parameters()]


# ---- learning -----------------------------------------------------------------------------------------------------


def test_loss_goes_down_on_a_fixed_batch():
    cfg = make_cfg(learning_rate=3e-3, normalize_returns=False)
    learner = make_learner(cfg)
    batch = learner.prepare_batch(make_trajectories(cfg))
    losses = [learner.train(batch)["loss"] for _ in range(40)]
    assert sum(losses[-5:]) / 5 < 0.7 * sum(losses[:5]) / 5


@pytest.mark.parametrize("optimizer", ["adam", "lamb"])
def test_zero_learning_rate_leaves_weights_unchanged(optimizer: str):
    cfg = make_cfg(learning_rate=0.0, optimizer=optimizer, num_epochs=2)
    learner = make_learner(cfg)
    weights_before = copy.deepcopy(learner.actor_critic.state_dict())
    stats = learner.train(learner.prepare_batch(make_trajectories(cfg)))
    # the steps did happen, with non-zero gradients: only the zero step size keeps the weights where they were
    assert stats["num_sgd_steps"] == 4 and learner.policy_version == 4 and stats["grad_norm"] > 0
    assert len(learner.optimizer.state) > 0
    weights_after = learner.actor_critic.state_dict()
    for name, _ in learner.actor_critic.named_parameters():
        assert torch.equal(weights_before[name], weights_after[name]), name


@pytest.mark.parametrize(
    ("action_space", "overrides"),
    [
        (gym.spaces.Box(-1.0, 1.0, (2,)), dict(kl_loss_coeff=0.5, use_rnn=False, recurrence=1)),
        (gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Discrete(2)]), dict(exploration_loss="symmetric_kl")),
        (DISCRETE, dict(rnn_type="lstm", actor_critic_share_weights=False, shuffle_minibatches=True, num_epochs=2)),
    ],
)
def test_other_action_spaces_and_losses_train(action_space: gym.Space, overrides: dict):
    cfg = make_cfg(**overrides)
    learner = make_learner(cfg, action_space)
    stats = learner.train(learner.prepare_batch(make_trajectories(cfg, action_space=action_space)))
    assert all(torch.isfinite(torch.tensor(value)) for value in stats.values())
    assert stats["grad_norm"] > 0
    if cfg.kl_loss_coeff > 0:
        assert stats["kl_loss"] == pytest.approx(cfg.kl_loss_coeff * stats["kl_divergence"])
    if cfg.exploration_loss == "symmetric_kl":
        assert stats["exploration_loss"] > 0  # symmetric KL is positive, -entropy would be negative


def test_the_kl_penalty_of_a_gaussian_policy_does_not_push_its_spread_up_when_only_its_means_moved():
    """KL(current || behaviour): with the standard deviations unchanged, a shift of the means costs 0.5 * (d / sigma)^2
    and its gradient leaves the log standard deviations alone; KL(behaviour || current) would push them up."""
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    cfg = make_cfg(use_rnn=False, recurrence=1, kl_loss_coeff=0.1)
    learner = make_learner(cfg, box)
    batch = 5
    log_stds = torch.tensor([[-0.5, 0.3]]).expand(batch, 2)
    behaviour_means = torch.zeros(batch, 2)
    shift = torch.tensor([[0.4, -0.2]])
    current_log_stds = log_stds.clone().requires_grad_(True)
    current = learner_module.get_action_distribution(
        box, torch.cat([behaviour_means + shift, current_log_stds], dim=1), None, cfg.continuous_tanh_scale,
        cfg.action_distribution,
    )  # fmt: skip
    mb = TensorDict(
        obs=TensorDict(obs=torch.zeros(batch, OBS_DIM)), action_logits=torch.cat([behaviour_means, log_stds], 1)
    )
    kl = learner._kl_divergence(mb, current, ValidMean(torch.ones(batch, dtype=torch.bool)), with_grad=True)
    torch.testing.assert_close(kl, 0.5 * (shift / log_stds[:1].exp()).square().sum())
    (grad,) = torch.autograd.grad(kl, current_log_stds)
    torch.testing.assert_close(grad, torch.zeros_like(grad), atol=1e-7, rtol=0)


# ---- learning-rate schedules --------------------------------------------------------------------------------------


def test_kl_adaptive_rule():
    threshold, lr_min, lr_max = 0.01, 1e-5, 1e-2
    assert kl_adaptive_lr(1e-3, 0.05, threshold, lr_min, lr_max) == pytest.approx(1e-3 / 1.5)  # KL > 2 thr
    assert kl_adaptive_lr(1e-3, 0.001, threshold, lr_min, lr_max) == pytest.approx(1e-3 * 1.5)  # KL < thr / 2
    assert kl_adaptive_lr(1e-3, 0.01, threshold, lr_min, lr_max) == 1e-3  # in between: unchanged
    assert kl_adaptive_lr(1.2e-5, 1.0, threshold, lr_min, lr_max) == lr_min  # clamped below
    assert kl_adaptive_lr(9e-3, 0.0, threshold, lr_min, lr_max) == lr_max  # clamped above
    assert kl_adaptive_lr(5e-6, 1.0, threshold, lr_min, lr_max) == 5e-6  # a decrease never raises the lr


@pytest.mark.parametrize("schedule", ["kl_adaptive_minibatch", "kl_adaptive_epoch"])
def test_adaptive_lr_follows_the_kl(schedule: str):
    cfg = make_cfg(lr_schedule=schedule, learning_rate=1e-4, lr_schedule_kl_threshold=0.01, num_epochs=2)
    trajectories = make_trajectories(cfg)

    far = make_learner(cfg)
    trajectories["action_logits"] = 5.0 * torch.randn_like(trajectories["action_logits"])  # KL far above threshold
    far_stats = far.train(far.prepare_batch(trajectories))
    assert far_stats["kl_divergence"] > 2 * cfg.lr_schedule_kl_threshold
    assert far.lr < cfg.learning_rate

    near = make_learner(cfg)
    with torch.no_grad():  # the current policy is uniform and so is the behaviour policy: KL ~ 0
        near.actor_critic.action_parameterization.distribution_linear.weight.zero_()
        near.actor_critic.action_parameterization.distribution_linear.bias.zero_()
    trajectories["action_logits"] = torch.zeros_like(trajectories["action_logits"])
    near_stats = near.train(near.prepare_batch(trajectories))
    assert near_stats["kl_divergence"] < 0.5 * cfg.lr_schedule_kl_threshold
    assert near.lr > cfg.learning_rate
    assert near.optimizer.param_groups[0]["lr"] > cfg.learning_rate  # the raised lr was used by later steps


# ---- BPTT and minibatches -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("rnn_type", "share_weights"), [("gru", True), ("lstm", True), ("gru", False)])
def test_bptt_with_dones_equals_step_by_step(rnn_type: str, share_weights: bool):
    cfg = make_cfg(rnn_type=rnn_type, actor_critic_share_weights=share_weights, rollout=12, recurrence=6, batch_size=24)
    learner = make_learner(cfg)
    trajectories = make_trajectories(cfg, done_prob=0.35, seed=3)
    trajectories["dones"][0, 1:3] = 1.0  # consecutive dones: a one-step episode
    trajectories["dones"][1, 5] = 1.0  # a done on a segment's last step
    # non-zero stored states after dones: the reset must come from the dones, not from the stored data
    trajectories["rnn_states"] = torch.randn_like(trajectories["rnn_states"])
    batch = learner.prepare_batch(trajectories)
    assert 0 < batch["dones"].sum() < batch["dones"].numel()

    with torch.no_grad():
        outputs = learner._evaluate_policy(batch)
    expected_values, expected_log_probs = step_by_step_outputs(learner, batch)
    torch.testing.assert_close(outputs.values, expected_values, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outputs.log_probs, expected_log_probs, rtol=1e-5, atol=1e-5)


def test_shuffled_minibatches_hold_whole_segments():
    cfg = make_cfg(shuffle_minibatches=True, rollout=8, recurrence=4, batch_size=8, num_batches_per_epoch=4)
    learner = make_learner(cfg)
    minibatches = minibatch_indices(32, learner.cfg, learner.recurrence, learner.device)
    assert len(minibatches) == 4
    segments = torch.stack(minibatches).view(4, -1, cfg.recurrence)  # [M, segments, R]
    assert torch.equal(segments - segments[..., :1], torch.arange(cfg.recurrence).expand_as(segments))
    assert torch.all(segments[..., 0] % cfg.recurrence == 0)
    assert torch.equal(torch.sort(segments.flatten()).values, torch.arange(32))


@pytest.mark.parametrize("shuffle", [False, True])
def test_minibatches_carry_their_valid_means_and_standardised_advantages(shuffle: bool):
    cfg = make_cfg(shuffle_minibatches=shuffle, rollout=8, recurrence=4, batch_size=8, num_batches_per_epoch=4)
    learner = make_learner(cfg)
    batch = learner.prepare_batch(make_trajectories(cfg))
    batch["valids"][3:6] = False
    for minibatch in learner._minibatches(batch):
        alone = ValidMean(minibatch.data["valids"])
        assert torch.equal(minibatch.valid_mean.valids, alone.valids)
        torch.testing.assert_close(minibatch.valid_mean.inv_count, alone.inv_count)
        expected = normalize_advantages(minibatch.data["advantages"], alone)
        torch.testing.assert_close(minibatch.std_advantages, expected, rtol=1e-5, atol=1e-6)
    vtrace_learner = make_learner(make_cfg(with_vtrace=True, use_rnn=False, recurrence=8))
    vtrace_batch = vtrace_learner.prepare_batch(make_trajectories(vtrace_learner.cfg))
    assert all(mb.std_advantages is None for mb in vtrace_learner._minibatches(vtrace_batch))


def test_reported_stats_of_an_epoch_are_each_minibatchs_own_valid_sample_stats():
    learner = make_learner(make_cfg(ppo_clip_ratio=0.1))
    g = torch.Generator().manual_seed(11)
    valids = torch.rand(3, 16, generator=g) > 0.3
    valids[1, :] = False
    valids[1, 5] = True  # a minibatch with one valid sample

    def per_sample() -> Tensor:
        return torch.randn(16, generator=g)

    reported = [
        ReportedSamples(
            per_sample(),
            per_sample(),
            per_sample(),
            per_sample(),
            per_sample(),
            per_sample() * 3.0,
            per_sample().mul(0.2).exp(),
        )  # fmt: skip
        for _ in range(3)
    ]
    columns = reported_stats(reported, [ValidMean(row) for row in valids], learner.cfg.ppo_clip_ratio)
    for m, samples in enumerate(reported):
        valid = valids[m]
        adv = samples.advantages[valid]
        ratios = samples.ratios[valid]
        expected = dict(
            policy_loss=samples.policy_terms[valid].mean(), value_loss=samples.value_terms[valid].mean(),
            exploration_loss=samples.explore_terms[valid].mean(), entropy=samples.entropy[valid].mean(),
            values=samples.values[valid].mean(), adv_mean=adv.mean(), adv_std=adv.std(unbiased=False),
            adv_min=adv.min(), adv_max=adv.max(), ratio_mean=ratios.mean(),
            clip_fraction=((ratios < 1 / 1.1) | (ratios > 1.1)).float().mean(),
        )  # fmt: skip
        assert set(columns) == set(expected)
        for key, value in expected.items():
            torch.testing.assert_close(columns[key][m], value, rtol=1e-5, atol=1e-6, msg=f"{key}, minibatch {m}")


# ---- V-trace ------------------------------------------------------------------------------------------------------


def test_vtrace_targets_match_rl_utils():
    cfg = make_cfg(with_vtrace=True, use_rnn=False, recurrence=8, vtrace_rho=1.0, vtrace_c=0.9, gamma=0.9)
    learner = make_learner(cfg)
    trajectories = make_trajectories(cfg)
    trajectories["valids"][1, 2] = False
    batch = learner.prepare_batch(trajectories)
    mb = batch[slice(0, cfg.batch_size)]  # the first two whole trajectories
    with torch.no_grad():
        outputs = learner._evaluate_policy(mb)
        advantages, targets = learner._advantages_and_targets(mb, outputs)

    normalizer = learner.actor_critic.returns_normalizer
    std = torch.sqrt(normalizer.running_var + normalizer.epsilon).float()
    mean = normalizer.running_mean.float()
    with torch.no_grad(), normalizers_mode(learner.actor_critic, training=False):
        last_obs = learner.actor_critic.normalize_obs({"obs": trajectories["obs"]["obs"][:2, -1]})
        bootstrap = learner.actor_critic(last_obs, trajectories["rnn_states"][:2, -1])["values"] * std + mean  # [2]
    values = (outputs.values * std + mean).view(2, -1)
    ratios = torch.exp(outputs.log_probs - mb["log_prob_actions"]).view(2, -1)
    valids = torch.cat([mb["valids"].view(2, -1), torch.ones(2, 1, dtype=torch.bool)], dim=1)
    vs, pg_advantages = vtrace(
        ratios, mb["rewards"].view(2, -1), mb["dones"].view(2, -1), torch.cat([values, bootstrap[:, None]], 1),
        valids, cfg.gamma, cfg.vtrace_rho, cfg.vtrace_c,
    )  # fmt: skip
    expected_targets = ((vs.flatten() - mean) / std).clamp(-normalizer.clip, normalizer.clip)
    torch.testing.assert_close(advantages, pg_advantages.flatten())
    torch.testing.assert_close(targets, expected_targets)
    assert not torch.allclose(targets, mb["returns"])  # V-trace targets are not the GAE returns of prepare_batch

    stats = learner.train(batch)
    assert stats is not None and stats["num_sgd_steps"] == 2 and stats["grad_norm"] > 0


# ---- masking ------------------------------------------------------------------------------------------------------


def _grads_after_one_step(learner: Learner, start_state: dict, trajectories: TensorDict) -> tuple[dict, list]:
    learner.load_checkpoint_state(copy.deepcopy(start_state))
    stats = learner.train(learner.prepare_batch(trajectories))
    return stats, grads(learner)


def test_invalid_samples_do_not_affect_the_gradient():
    cfg = make_cfg(use_rnn=False, recurrence=1, batch_size=32, num_batches_per_epoch=1, learning_rate=0.0)
    cfg.value_bootstrap = True
    learner = make_learner(cfg)
    start_state = copy.deepcopy(learner.get_checkpoint_state())
    trajectories = make_trajectories(cfg)
    invalid = torch.rand(4, cfg.rollout, generator=torch.Generator().manual_seed(5)) < 0.3
    trajectories["valids"] = ~invalid
    stats, reference = _grads_after_one_step(learner, start_state, trajectories)

    changed = trajectories.clone()
    for key in ("actions", "log_prob_actions", "action_logits", "values", "rewards", "time_outs", "policy_version"):
        replacement = make_trajectories(cfg, seed=9)[key]
        where_invalid = invalid.view(*invalid.shape, *[1] * (replacement.dim() - 2))
        changed[key] = torch.where(where_invalid, replacement, changed[key])
    changed["obs"]["obs"][:, :-1][invalid] = 100.0
    changed_stats, changed_grads = _grads_after_one_step(learner, start_state, changed)
    for expected, actual in zip(reference, changed_grads, strict=True):
        torch.testing.assert_close(actual, expected)
    assert changed_stats["loss"] == pytest.approx(stats["loss"])

    control = trajectories.clone()  # the same change on a valid sample must show, or the test proves nothing
    valid_index = (~invalid).nonzero()[0]
    control["rewards"][valid_index[0], valid_index[1]] += 5.0
    _, control_grads = _grads_after_one_step(learner, start_state, control)
    assert any(not torch.allclose(a, b) for a, b in zip(reference, control_grads, strict=True))


def test_max_policy_lag_discards_stale_samples():
    cfg = make_cfg(max_policy_lag=10)
    learner = make_learner(cfg)
    learner.policy_version = 50
    trajectories = make_trajectories(cfg)
    trajectories["policy_version"][:] = 45
    trajectories["policy_version"][0] = 30  # a lag of 20 > 10
    trajectories["policy_version"][1, :3] = 39  # a lag of exactly 11 on three steps
    batch = learner.prepare_batch(trajectories)
    expected_stale = torch.zeros(4, cfg.rollout, dtype=torch.bool)
    expected_stale[0] = True
    expected_stale[1, :3] = True
    assert torch.equal(batch["discarded"], expected_stale.flatten())
    assert torch.equal(batch["valids"], ~expected_stale.flatten())
    stats = learner.train(batch)
    assert stats["num_discarded"] == cfg.rollout + 3
    assert stats["fraction_invalid"] == pytest.approx((cfg.rollout + 3) / (4 * cfg.rollout))
    assert (stats["version_diff_min"], stats["version_diff_max"]) == (5, 20)

    learner.policy_version = 1000
    assert learner.train(learner.prepare_batch(trajectories)) is None  # everything stale: no SGD step


# ---- batch preparation --------------------------------------------------------------------------------------------


def test_prepare_batch_does_not_mutate_or_alias_the_trajectories():
    cfg = make_cfg(value_bootstrap=True, reward_scale=0.5, normalize_input=True, normalize_returns=True)
    learner = make_learner(cfg)
    for num_trajectories in (4, 1):  # with one trajectory, slices of the input are contiguous views
        trajectories = make_trajectories(cfg, num_trajectories=num_trajectories)
        trajectories["obs"]["obs"] = trajectories["obs"]["obs"].contiguous()
        original = trajectories.clone()
        cfg.batch_size = num_trajectories * cfg.rollout // cfg.num_batches_per_epoch
        batch = learner.prepare_batch(trajectories)
        learner.train(batch)
        for before, after in zip(original.leaves(), trajectories.leaves(), strict=True):
            assert torch.equal(before, after)
        input_storages = {t.untyped_storage().data_ptr() for t in trajectories.leaves()}
        assert not any(t.untyped_storage().data_ptr() in input_storages for t in batch.leaves())


def test_prepare_batch_shapes_rewards_and_bootstraps_time_outs():
    cfg = make_cfg(
        reward_scale=2.0, reward_clip=1.5, value_bootstrap=True, normalize_returns=False, gamma=0.9, use_rnn=False,
        recurrence=1, gae_lambda=1.0,
    )  # fmt: skip
    learner = make_learner(cfg)
    trajectories = make_trajectories(cfg, num_trajectories=2)
    trajectories["rewards"][:] = 0.5
    trajectories["rewards"][0, 0] = -3.0
    trajectories["dones"][:] = 0.0
    trajectories["time_outs"][:] = 0.0
    trajectories["dones"][0, 3] = trajectories["time_outs"][0, 3] = 1.0  # truncated mid-rollout
    trajectories["dones"][1, 7] = trajectories["time_outs"][1, 7] = 1.0  # truncated on the last step
    trajectories["valids"][0, 5] = False
    batch = learner.prepare_batch(trajectories)

    bootstrap = batch["bootstrap_values"].view(2, -1)[:, 0]  # model output; reward units without normalize_returns
    with torch.no_grad(), normalizers_mode(learner.actor_critic, training=False):
        last_obs = learner.actor_critic.normalize_obs({"obs": trajectories["obs"]["obs"][:, -1]})
        expected_bootstrap = learner.actor_critic(last_obs, trajectories["rnn_states"][:, -1])["values"]
    torch.testing.assert_close(bootstrap, expected_bootstrap)

    expected = torch.ones(2, cfg.rollout)  # 0.5 * 2
    expected[0, 0] = -1.5  # -6 clipped
    # a truncated step bootstraps from its own state's value, never from the next episode's start (step 4) or the
    # value after the rollout (trajectory 1's bootstrap)
    expected[0, 3] += 0.9 * trajectories["values"][0, 3]
    expected[1, 7] += 0.9 * trajectories["values"][1, 7]
    assert not torch.isclose(trajectories["values"][0, 3], trajectories["values"][0, 4])
    assert not torch.isclose(trajectories["values"][1, 7], bootstrap[1])
    torch.testing.assert_close(batch["rewards"], expected.flatten())

    # gae_lambda = 1: returns are discounted reward sums to the episode end (or the bootstrap value); the invalid
    # step 5 is skipped without discounting
    returns = batch["returns"].view(2, -1)
    torch.testing.assert_close(returns[0, 3], expected[0, 3])
    torch.testing.assert_close(returns[0, 2], expected[0, 2] + 0.9 * expected[0, 3])
    expected_return_4 = expected[0, 4] + 0.9 * expected[0, 6] + 0.81 * expected[0, 7] + 0.729 * bootstrap[0]
    torch.testing.assert_close(returns[0, 4], expected_return_4)


def test_observation_statistics_update_once_per_batch_from_valid_samples():
    cfg = make_cfg(normalize_input=True, num_epochs=3)
    learner = make_learner(cfg)
    trajectories = make_trajectories(cfg)
    trajectories["valids"][2:] = False
    normalizer = learner.actor_critic.obs_normalizer.running_mean_std["obs"]
    batch = learner.prepare_batch(trajectories)
    valid_obs = trajectories["obs"]["obs"][:2, :-1].reshape(-1, OBS_DIM).double()
    assert normalizer.count.item() == valid_obs.shape[0]
    torch.testing.assert_close(normalizer.running_mean, valid_obs.mean(0))
    learner.train(batch)  # SGD epochs must not touch the statistics
    assert normalizer.count.item() == valid_obs.shape[0]


# ---- checkpoints --------------------------------------------------------------------------------------------------


def test_checkpoint_state_round_trips_through_weights_only_load(tmp_path):
    cfg = make_cfg(lr_schedule="kl_adaptive_minibatch")
    learner = make_learner(cfg)
    trajectories = make_trajectories(cfg)
    learner.train(learner.prepare_batch(trajectories))
    path = tmp_path / "checkpoint.pth"
    torch.save(learner.get_checkpoint_state(), path)
    state = torch.load(path, weights_only=True)

    restored = make_learner(cfg, seed=123)
    restored.load_checkpoint_state(state)
    assert (restored.train_step, restored.policy_version, restored.lr) == (1, 2, learner.lr)
    restored_model = restored.actor_critic.state_dict()
    for name, expected in learner.actor_critic.state_dict().items():
        assert torch.equal(expected, restored_model[name]), name
    buffer = io.BytesIO()
    torch.save(restored.optimizer.state_dict(), buffer)  # the optimiser state itself is weights_only-loadable too
    buffer.seek(0)
    torch.load(buffer, weights_only=True)

    expected_stats = learner.train(learner.prepare_batch(trajectories))
    restored_stats = restored.train(restored.prepare_batch(trajectories))
    assert restored_stats["loss"] == pytest.approx(expected_stats["loss"], rel=1e-6)
    assert restored_stats["policy_version"] == expected_stats["policy_version"] == 4


# ---- Sample Factory 2's constructor: versions table and parameter server -----------------------------------------


def _published_equals_live(server: ParameterServer, learner: Learner) -> bool:
    torch.manual_seed(99)  # the reader starts from other weights, so equality proves the copy
    reader = create_actor_critic(learner.cfg, learner.env_info.obs_space, learner.env_info.action_space)
    assert not torch.equal(next(reader.parameters()), next(learner.actor_critic.parameters()))
    server.load_into(reader)
    live = learner.actor_critic.state_dict()
    return all(torch.equal(value, live[name]) for name, value in reader.state_dict().items())


@pytest.mark.parametrize("by_keyword", [False, True])
def test_learner_publishes_through_param_server_after_init_and_each_train(by_keyword: bool):
    cfg = make_cfg()
    versions = torch.zeros(2, dtype=torch.int64)
    server = ParameterServer(1, versions, serial_mode=True)
    torch.manual_seed(0)
    if by_keyword:
        learner = Learner(cfg, make_env_info(), policy_versions_tensor=versions, policy_id=1, param_server=server)
    else:
        learner = Learner(cfg, make_env_info(), versions, 1, server)
    assert learner.policy_id == 1
    learner.init()
    assert server.actor_critic is learner.actor_critic and server.policy_version == 0
    assert _published_equals_live(server, learner)

    stats = learner.train(learner.prepare_batch(make_trajectories(cfg)))
    assert stats["policy_version"] == learner.policy_version == 2  # 2 minibatches, one SGD step each
    assert server.policy_version == 2 and versions.tolist() == [0, 2]
    assert _published_equals_live(server, learner)


def test_versions_table_alone_follows_the_policy_version():
    cfg = make_cfg()
    versions = torch.full((3,), -1, dtype=torch.int64)
    torch.manual_seed(0)
    learner = Learner(cfg, make_env_info(), versions, policy_id=2)
    learner.init()
    assert versions.tolist() == [-1, -1, 0]
    learner.train(learner.prepare_batch(make_trajectories(cfg)))
    assert versions.tolist() == [-1, -1, 2]


def test_restored_checkpoint_is_published():
    cfg = make_cfg()
    source = make_learner(cfg)
    source.train(source.prepare_batch(make_trajectories(cfg)))
    server = ParameterServer(0, torch.zeros(1, dtype=torch.int64), serial_mode=True)
    torch.manual_seed(5)
    restored = Learner(cfg, make_env_info(), param_server=server)
    restored.init()
    restored.load_checkpoint_state(copy.deepcopy(source.get_checkpoint_state()))
    assert server.policy_version == 2 and _published_equals_live(server, restored)


def test_older_positional_policy_id_still_works_and_bad_third_arguments_are_named():
    learner = Learner(make_cfg(), make_env_info(), 3)
    assert (learner.policy_id, learner.policy_versions_tensor, learner.param_server) == (3, None, None)
    with pytest.raises(TypeError, match="policy_versions_tensor"):
        Learner(make_cfg(), make_env_info(), "0")
    with pytest.raises(TypeError, match="pass it once"):
        Learner(make_cfg(), make_env_info(), 3, policy_id=1)


def test_multi_epoch_training_reports_every_stat_of_its_last_epoch():
    """Earlier epochs skip the reporting-only stats; the summary must still hold all of them, from the last epoch."""
    one = make_learner(make_cfg(num_epochs=1))
    three = make_learner(make_cfg(num_epochs=3))
    trajectories = make_trajectories(make_cfg())
    one_stats = one.train(one.prepare_batch(trajectories))
    three_stats = three.train(three.prepare_batch(trajectories))
    assert set(three_stats) == set(one_stats)
    assert three_stats["num_sgd_steps"] == 3 * one_stats["num_sgd_steps"]
    assert three_stats["ratio_mean"] != one_stats["ratio_mean"]  # measured after two epochs of updates


# ---- the loss against its formulas --------------------------------------------------------------------------------


def _valid_mean(x: Tensor, valids: Tensor) -> Tensor:
    return x[valids].mean()


@pytest.mark.parametrize("exploration", ["entropy", "symmetric_kl"])
def test_total_loss_and_its_terms_match_the_formulas(exploration: str):
    """PPO's clipped surrogate, the clipped value loss, exploration and KL terms, each a mean over valid samples."""
    cfg = make_cfg(
        use_rnn=False, recurrence=1, batch_size=32, num_batches_per_epoch=1, exploration_loss=exploration,
        exploration_loss_coeff=0.03, kl_loss_coeff=0.2, value_loss_coeff=0.7, ppo_clip_ratio=0.1,
        ppo_clip_value=0.3,
    )  # fmt: skip
    learner = make_learner(cfg)
    trajectories = make_trajectories(cfg)
    trajectories["valids"] = torch.rand(4, cfg.rollout, generator=torch.Generator().manual_seed(3)) > 0.25
    mb = learner.prepare_batch(trajectories)
    outputs = learner._evaluate_policy(mb)
    advantages, targets = learner._advantages_and_targets(mb, outputs)
    minibatch = Minibatch(mb, ValidMean(mb["valids"]), None)  # V-trace-style: advantages standardised in the step
    loss, stats, samples = learner._losses(minibatch, outputs, advantages, targets, full_stats=True)
    reported = reported_stats([samples], [ValidMean(mb["valids"])], cfg.ppo_clip_ratio)  # one minibatch: [1] each
    stats.update({key: column[0] for key, column in reported.items()})

    valids = mb["valids"]
    log_ratio = (outputs.log_probs - mb["log_prob_actions"]).clamp(
        torch.log(torch.tensor(0.05)), torch.log(torch.tensor(20.0))
    )
    ratios = log_ratio.exp()
    adv = (advantages - _valid_mean(advantages, valids)) / (advantages[valids].std(unbiased=False) + 1e-5)
    clipped = ratios.clamp(1 / 1.1, 1.1)
    policy_loss = -_valid_mean(torch.min(ratios * adv, clipped * adv), valids)
    v, v_old = outputs.values, mb["values"]
    v_clipped = v_old + (v - v_old).clamp(-0.3, 0.3)
    value_loss = 0.7 * _valid_mean(torch.max((v - targets) ** 2, (v_clipped - targets) ** 2), valids)
    probs = outputs.distribution.log_probs.exp()
    if exploration == "entropy":
        per_sample = (probs * outputs.distribution.log_probs).sum(-1)  # -H
    else:
        n = probs.shape[-1]
        uniform_log = -torch.log(torch.tensor(float(n)))
        per_sample = ((1 / n) * (uniform_log - outputs.distribution.log_probs)).sum(-1) + (
            probs * (outputs.distribution.log_probs - uniform_log)
        ).sum(-1)
    exploration_loss = 0.03 * _valid_mean(per_sample, valids)
    old_log_probs = torch.log_softmax(mb["action_logits"], dim=-1)
    kl = _valid_mean((probs * (outputs.distribution.log_probs - old_log_probs)).sum(-1), valids)  # KL(pi || mu)
    expected = dict(
        policy_loss=policy_loss, value_loss=value_loss, exploration_loss=exploration_loss, kl_divergence=kl,
        kl_loss=0.2 * kl, loss=policy_loss + value_loss + exploration_loss + 0.2 * kl,
    )  # fmt: skip
    for key, value in expected.items():
        torch.testing.assert_close(stats[key], value.detach(), rtol=1e-5, atol=1e-6, msg=key)
    torch.testing.assert_close(loss.detach(), expected["loss"].detach(), rtol=1e-5, atol=1e-6)
    params = list(learner.actor_critic.parameters())
    actual_grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    expected_grads = torch.autograd.grad(expected["loss"], params, allow_unused=True)
    for actual, wanted in zip(actual_grads, expected_grads, strict=True):
        if wanted is not None:
            torch.testing.assert_close(actual, wanted, rtol=1e-4, atol=1e-6)


# ---- conv nets train channels-last on the CPU ---------------------------------------------------------------------


def _image_learner() -> Learner:
    cfg = make_cfg(use_rnn=False, recurrence=1, encoder_conv_architecture="convnet_simple", normalize_input=True)
    env_info = types.SimpleNamespace(
        obs_space=gym.spaces.Box(0, 255, (3, 36, 40), dtype=np.uint8), action_space=DISCRETE, num_agents=1
    )
    torch.manual_seed(0)
    learner = Learner(cfg, env_info)
    learner.init()
    return learner


def _image_trajectories(cfg) -> TensorDict:
    trajectories = make_trajectories(cfg)
    gen = torch.Generator().manual_seed(2)
    n, t = trajectories["rewards"].shape
    trajectories["obs"] = TensorDict(obs=torch.randint(0, 256, (n, t + 1, 3, 36, 40), dtype=torch.uint8, generator=gen))
    return trajectories


def test_conv_nets_train_channels_last_on_cpu_with_the_same_results(monkeypatch):
    """NHWC is a memory layout only: the loss, every gradient and the checkpointed weights are those of NCHW."""
    nhwc = _image_learner()
    monkeypatch.setattr(learner_module, "trains_faster_channels_last", lambda model, device: False)
    nchw = _image_learner()  # the learner as it was before the layout choice: NCHW everywhere
    assert nhwc.channels_last and not nchw.channels_last
    assert not make_learner(make_cfg()).channels_last  # no conv layer: nothing to gain
    conv_weight = next(m for m in nhwc.actor_critic.modules() if isinstance(m, torch.nn.Conv2d)).weight
    assert conv_weight.is_contiguous(memory_format=torch.channels_last) and not conv_weight.is_contiguous()
    trajectories = _image_trajectories(nhwc.cfg)
    batch_nhwc, batch_nchw = nhwc.prepare_batch(trajectories), nchw.prepare_batch(trajectories)
    assert batch_nhwc["obs"]["obs"].is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(batch_nhwc["obs"]["obs"], batch_nchw["obs"]["obs"])
    stats_nhwc, stats_nchw = nhwc.train(batch_nhwc), nchw.train(batch_nchw)
    assert stats_nhwc["loss"] == pytest.approx(stats_nchw["loss"], rel=1e-4)
    for a, b in zip(grads(nhwc), grads(nchw), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)
    buffer = io.BytesIO()  # a checkpoint loads into a model with the default layout (enjoy, inference workers)
    torch.save(nhwc.get_checkpoint_state(), buffer)
    buffer.seek(0)
    fresh = create_actor_critic(nhwc.cfg, nhwc.env_info.obs_space, DISCRETE)
    fresh.load_state_dict(torch.load(buffer, weights_only=True)["model"])
    for name, value in fresh.state_dict().items():
        torch.testing.assert_close(value, nhwc.actor_critic.state_dict()[name], msg=name)


def test_a_sample_factory_2_checkpoint_state_resumes_training():
    """SF2 writes no ``policy_version`` or ``lr_schedule``: its policy version is its train step, its rate curr_lr."""
    cfg = make_cfg()
    learner = make_learner(cfg)
    learner.train(learner.prepare_batch(make_trajectories(cfg)))
    ours = learner.get_checkpoint_state()
    sf2_state = {
        "train_step": 7,
        "env_steps": 7000,
        "best_performance": 1.5,
        "model": copy.deepcopy(ours["model"]),
        "optimizer": copy.deepcopy(ours["optimizer"]),
        "curr_lr": 3e-4,
    }
    restored = make_learner(cfg, seed=5)
    restored.load_checkpoint_state(sf2_state)
    assert (restored.train_step, restored.policy_version, restored.lr) == (7, 7, 3e-4)
    restored.train(restored.prepare_batch(make_trajectories(cfg)))
    assert restored.train_step == 8
