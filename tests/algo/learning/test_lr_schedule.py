"""``--lr_schedule=linear_decay``: the rate after k minibatch updates, its end at 0, resume and PBT.

The horizon is ``train_for_env_steps // batch_size * num_epochs`` minibatch updates (Sample Factory 2's formula);
the expected values below are computed by hand from it, not by the schedule's own helper.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from algo.learning.test_learner import make_cfg

from sample_factory.algo.learning.learner import Learner
from sample_factory.algo.learning.lr_schedule import LinearDecayLrSchedule, linear_decay_updates, make_lr_schedule
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.tensor_dict import TensorDict

LR0 = 1e-3
OBS_DIM = 3


@pytest.fixture(autouse=True, scope="module")
def _single_torch_thread():
    num_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(num_threads)


def schedule_cfg(train_for_env_steps: int, batch_size: int, num_epochs: int) -> AttrDict:
    return AttrDict(
        learning_rate=LR0, train_for_env_steps=train_for_env_steps, batch_size=batch_size, num_epochs=num_epochs
    )


def test_the_horizon_is_sample_factory_2s_formula():
    # 10M env steps, minibatches of 1024, 2 epochs (the MuJoCo family): 9765 * 2 updates; the floor division
    # comes before the multiplication
    assert linear_decay_updates(schedule_cfg(10_000_000, 1024, 2)) == 19_530
    assert linear_decay_updates(schedule_cfg(1000, 300, 4)) == 12  # not 1000 * 4 // 300 = 13


@pytest.mark.parametrize("k", [0, 1, 37, 99, 100])
def test_rate_after_k_updates_is_the_straight_line(k: int):
    schedule = make_lr_schedule(AttrDict(schedule_cfg(1000, 20, 2), lr_schedule="linear_decay"))
    for _ in range(k):
        schedule.after_minibatch(None)
    assert schedule.lr == pytest.approx(LR0 * (1 - k / 100))  # 1000 // 20 * 2 = 100 updates


def test_reaches_zero_at_the_end_and_stays_there():
    schedule = LinearDecayLrSchedule(schedule_cfg(64, 16, 2))  # 8 updates
    rates = []
    for _ in range(12):
        rates.append(schedule.lr)
        schedule.after_minibatch(None)
    assert rates[:9] == pytest.approx([LR0 * (8 - k) / 8 for k in range(9)])
    assert rates[8:] == [0.0] * 4 and schedule.lr == 0.0


def test_a_run_shorter_than_one_minibatch_trains_at_zero():
    assert LinearDecayLrSchedule(schedule_cfg(10, 16, 2)).lr == 0.0


def test_the_flag_accepts_linear_decay():
    argv = ["--env=x", "--lr_schedule=linear_decay"]
    parser, _ = parse_sf_args(argv)
    assert parse_full_cfg(parser, argv).lr_schedule == "linear_decay"


def test_an_unknown_schedule_names_the_valid_ones():
    with pytest.raises(ValueError, match="linear_decay"):
        make_lr_schedule(AttrDict(schedule_cfg(100, 10, 1), lr_schedule="cosine"))


# ---- inside the learner ---------------------------------------------------------------------------------------


def learner_cfg(**overrides):
    """2 minibatches of 16 samples, 2 epochs: 4 SGD steps per ``train``; 64 env steps -> 8 updates in all."""
    settings = dict(
        encoder_mlp_layers=[8], use_rnn=False, recurrence=1, num_epochs=2, learning_rate=LR0,
        lr_schedule="linear_decay", train_for_env_steps=64,
    )  # fmt: skip
    return make_cfg(**{**settings, **overrides})


def make_learner(cfg) -> Learner:
    torch.manual_seed(0)
    env_info = AttrDict(
        obs_space=gym.spaces.Box(-1.0, 1.0, (OBS_DIM,)), action_space=gym.spaces.Discrete(2), num_agents=1
    )
    learner = Learner(cfg, env_info)
    learner.init()
    return learner


def trajectories(cfg, seed: int = 1) -> TensorDict:
    gen = torch.Generator().manual_seed(seed)
    n, t = cfg.batch_size * cfg.num_batches_per_epoch // cfg.rollout, cfg.rollout
    return TensorDict(
        obs=TensorDict(obs=torch.randn(n, t + 1, OBS_DIM, generator=gen)),
        rnn_states=torch.zeros(n, t + 1, 1),
        actions=torch.randint(0, 2, (n, t), generator=gen),
        log_prob_actions=torch.full((n, t), -0.7),
        action_logits=torch.zeros(n, t, 2),
        values=torch.randn(n, t, generator=gen),
        rewards=torch.randn(n, t, generator=gen),
        dones=torch.zeros(n, t),
        time_outs=torch.zeros(n, t),
        valids=torch.ones(n, t, dtype=torch.bool),
        policy_version=torch.zeros(n, t, dtype=torch.int64),
    )


def record_step_rates(learner: Learner) -> list[float]:
    """The learning rate of every optimiser step from now on (a step hook also forces torch's own Adam step)."""
    rates: list[float] = []
    learner.optimizer.register_step_pre_hook(lambda opt, args, kwargs: rates.append(opt.param_groups[0]["lr"]))
    return rates


def train_once(learner: Learner, seed: int = 1) -> dict:
    return learner.train(learner.prepare_batch(trajectories(learner.cfg, seed)))


def test_each_sgd_step_uses_the_rate_of_its_update_index():
    learner = make_learner(learner_cfg())
    rates = record_step_rates(learner)
    stats = [train_once(learner, seed) for seed in (1, 2, 3)]
    assert rates == pytest.approx([LR0 * (8 - k) / 8 for k in range(8)] + [0.0] * 4)
    assert [s["lr"] for s in stats] == pytest.approx([LR0 / 2, 0.0, 0.0])  # the rate after each call


def resumed_after_one_call(tmp_path, cfg) -> Learner:
    first = make_learner(cfg)
    train_once(first, 1)
    path = tmp_path / "checkpoint.pth"
    torch.save(first.get_checkpoint_state(), path)
    resumed = make_learner(cfg)
    resumed.load_checkpoint_state(torch.load(path, weights_only=True))
    return resumed


def test_resume_continues_the_decay(tmp_path):
    cfg = learner_cfg(train_for_env_steps=96)  # 12 updates
    uninterrupted = make_learner(cfg)
    train_once(uninterrupted, 1)
    train_once(uninterrupted, 2)

    resumed = resumed_after_one_call(tmp_path, cfg)
    assert resumed.lr == pytest.approx(LR0 * 8 / 12)
    train_once(resumed, 2)
    assert resumed.lr == pytest.approx(uninterrupted.lr) == pytest.approx(LR0 * 4 / 12)
    for name, weights in uninterrupted.actor_critic.state_dict().items():
        torch.testing.assert_close(resumed.actor_critic.state_dict()[name], weights, rtol=0, atol=0, msg=name)

    watched = resumed_after_one_call(tmp_path, cfg)
    rates = record_step_rates(watched)
    train_once(watched, 2)
    assert rates == pytest.approx([LR0 * (12 - k) / 12 for k in range(4, 8)])


def test_a_checkpoint_of_another_schedule_starts_the_line_from_the_configured_rate():
    constant = make_learner(learner_cfg(lr_schedule="constant"))
    train_once(constant)
    resumed = make_learner(learner_cfg())
    resumed.load_checkpoint_state(constant.get_checkpoint_state())
    assert resumed.lr == LR0 and resumed.lr_schedule.num_updates == 0


def test_pbt_rescales_the_line_and_keeps_its_progress():
    learner = make_learner(learner_cfg())
    train_once(learner)  # 4 of 8 updates done
    learner.set_hyperparameters({"learning_rate": 4e-3})
    assert learner.lr == pytest.approx(4e-3 / 2)
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(4e-3 / 2)
    rates = record_step_rates(learner)
    train_once(learner, 2)
    assert rates == pytest.approx([4e-3 * (8 - k) / 8 for k in range(4, 8)])


def kl_schedule_cfg(lr_schedule: str) -> AttrDict:
    return AttrDict(
        learning_rate=LR0,
        lr_schedule=lr_schedule,
        lr_schedule_kl_threshold=0.2,
        lr_adaptive_min=1e-6,
        lr_adaptive_max=1e-2,
    )


def test_kl_adaptive_epoch_reduces_the_epochs_mean_kl_once_per_epoch():
    """The distributed ``reduce_kl`` is called where the rule reads the KL: once per epoch, on the epoch's mean."""
    seen = []

    def reduce_kl(kl: torch.Tensor) -> torch.Tensor:
        seen.append(float(kl))
        return torch.tensor(0.25)  # inside the band: keeps the rate, whatever the local KLs say

    schedule = make_lr_schedule(kl_schedule_cfg("kl_adaptive_epoch"), reduce_kl=reduce_kl)
    for _ in range(2):
        for kl in (0.01, 0.03):  # alone they would raise the rate
            schedule.after_minibatch(torch.tensor(kl))
        schedule.after_epoch()
    assert seen == pytest.approx([0.02, 0.02])
    assert schedule.lr == LR0
    plain = make_lr_schedule(kl_schedule_cfg("kl_adaptive_epoch"))
    plain.after_minibatch(torch.tensor(0.01))
    plain.after_epoch()
    assert plain.lr == pytest.approx(LR0 * 1.5)


def test_kl_adaptive_minibatch_reduces_every_steps_kl():
    calls = []
    schedule = make_lr_schedule(kl_schedule_cfg("kl_adaptive_minibatch"), reduce_kl=lambda kl: calls.append(kl) or kl)
    for kl in (0.01, 0.5):
        schedule.after_minibatch(torch.tensor(kl))
    assert len(calls) == 2
    assert schedule.lr == pytest.approx(LR0)  # raised by 1.5, then lowered by 1.5
