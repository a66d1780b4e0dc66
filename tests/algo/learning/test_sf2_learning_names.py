"""Sample Factory 2's names of the learning side: LR schedulers, model_initialization_data, the batcher's slice helpers,
and the Batcher / LearnerWorker constructors with their process set-up."""

from __future__ import annotations

import types

import gymnasium as gym
import numpy as np
import pytest
import torch
from algo.learning.test_batcher import _setup

from sample_factory.algo.learning import learner_worker as learner_worker_module
from sample_factory.algo.learning.batcher import Batcher, BatcherComponent, SliceMerger, slice_len
from sample_factory.algo.learning.learner import (
    KlAdaptiveScheduler,
    KlAdaptiveSchedulerPerEpoch,
    KlAdaptiveSchedulerPerMinibatch,
    LearningRateScheduler,
    LinearDecayScheduler,
    get_lr_scheduler,
    model_initialization_data,
)
from sample_factory.algo.learning.learner_worker import LearnerWorker, LearnerWorkerComponent, init_learner_process
from sample_factory.algo.learning.lr_schedule import LinearDecayLrSchedule
from sample_factory.algo.runners import sf2_constructors
from sample_factory.algo.utils.context import (
    SampleFactoryContext,
    global_env_registry,
    global_model_factory,
    sf_global_context,
)
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router
from sample_factory.utils.attr_dict import AttrDict


def _cfg(**overrides) -> AttrDict:
    cfg = AttrDict(
        lr_schedule="constant", learning_rate=1e-3, lr_schedule_kl_threshold=0.01, lr_adaptive_min=1e-6,
        lr_adaptive_max=1e-2, num_batches_per_epoch=2, train_for_env_steps=1000, batch_size=100, num_epochs=2,
    )  # fmt: skip
    cfg.update(overrides)
    return cfg


@pytest.mark.parametrize(
    ("schedule", "cls", "after_minibatch", "after_epoch"),
    [
        ("constant", LearningRateScheduler, False, False),
        ("kl_adaptive_minibatch", KlAdaptiveSchedulerPerMinibatch, True, False),
        ("kl_adaptive_epoch", KlAdaptiveSchedulerPerEpoch, False, True),
        ("linear_decay", LinearDecayScheduler, True, False),
    ],
)
def test_get_lr_scheduler_picks_the_schedule(schedule, cls, after_minibatch: bool, after_epoch: bool) -> None:
    scheduler = get_lr_scheduler(_cfg(lr_schedule=schedule))
    assert type(scheduler) is cls
    assert scheduler.invoke_after_each_minibatch() is after_minibatch
    assert scheduler.invoke_after_each_epoch() is after_epoch


def test_get_lr_scheduler_rejects_an_unknown_schedule() -> None:
    with pytest.raises(ValueError, match="--lr_schedule='cosine'.*linear_decay"):
        get_lr_scheduler(_cfg(lr_schedule="cosine"))


def test_constant_scheduler_keeps_the_rate() -> None:
    assert LearningRateScheduler().update(3e-4, [10.0]) == 3e-4


def test_kl_adaptive_per_minibatch_reads_the_last_kl() -> None:
    scheduler = KlAdaptiveSchedulerPerMinibatch(_cfg())
    assert isinstance(scheduler, KlAdaptiveScheduler)
    assert scheduler.update(1e-3, [0.0, 0.05]) == pytest.approx(1e-3 / 1.5)  # too far: lower
    assert scheduler.update(1e-3, [0.05, 0.001]) == pytest.approx(1.5e-3)  # barely moved: raise
    assert scheduler.update(1e-3, [0.015]) == 1e-3  # within [thr/2, 2*thr]: kept
    assert scheduler.update(9e-3, [0.0]) == pytest.approx(1e-2)  # never above lr_adaptive_max
    with pytest.raises(ValueError, match="at least one minibatch"):
        scheduler.update(1e-3, [])


def test_kl_adaptive_per_epoch_averages_the_epochs_kls() -> None:
    scheduler = KlAdaptiveSchedulerPerEpoch(_cfg(num_batches_per_epoch=2))
    # the last two KLs average 0.03 > 2 * 0.01: lower; the first one (0.0) belongs to an earlier epoch
    assert scheduler.update(1e-3, [0.0, 0.02, 0.04]) == pytest.approx(1e-3 / 1.5)
    assert scheduler.update(1e-3, [0.03, 0.0, 0.0]) == pytest.approx(1.5e-3)


def test_linear_decay_scheduler_follows_the_package_schedule() -> None:
    cfg = _cfg(lr_schedule="linear_decay")  # 1000 // 100 * 2 = 20 updates
    scheduler, schedule = LinearDecayScheduler(cfg), LinearDecayLrSchedule(cfg)
    lr = cfg.learning_rate
    for k in range(1, 25):
        lr = scheduler.update(lr, [])
        schedule.after_minibatch(None)
        assert lr == pytest.approx(schedule.lr)
        assert lr == pytest.approx(max(0.0, 1e-3 * (1 - k / 20)))
    assert lr == 0.0


def test_model_initialization_data_shares_weights_only_across_processes() -> None:
    model = torch.nn.Linear(3, 2)
    device = torch.device("cpu")
    policy_id, state, dev, version = model_initialization_data(AttrDict(serial_mode=True), 1, model, 7, device)
    assert (policy_id, state, dev, version) == (1, None, device, 7)
    _, state, _, _ = model_initialization_data(AttrDict(serial_mode=False), 1, model, 7, device)
    assert set(state) == {"weight", "bias"}
    torch.testing.assert_close(state["weight"], model.weight.detach())


def test_slice_len_and_its_errors() -> None:
    assert slice_len(slice(3, 11)) == 8
    with pytest.raises(ValueError, match="start and stop"):
        slice_len(slice(None, 4))


def test_slice_merger_joins_adjacent_slices_in_order() -> None:
    merger = SliceMerger()
    merged = merger.merge_slices([slice(0, 4), slice(4, 8), slice(12, 16)])
    assert merged == [slice(0, 8), slice(12, 16)]
    assert merger.merge_slices([slice(16, 20), slice(2, 3)]) == [slice(0, 8), slice(12, 20), slice(2, 3)]
    assert merger.total_num == 4 + 4 + 4 + 4 + 1


def _sf2_loop() -> EventLoop:
    router = Router({}, {"main": LocalInbox()})
    return EventLoop("main", router.inboxes["main"], router)


def test_batcher_with_sf2_parameters_names_the_supported_way() -> None:
    with pytest.raises(TypeError, match=r"Batcher\(evt_loop, policy_id, buffer_mgr, cfg, env_info\).*make_runner"):
        Batcher(_sf2_loop(), 0, object(), _cfg(), None)


def test_batcher_package_form_builds_the_component() -> None:
    batcher, _, _ = _setup(async_rl=True)
    assert isinstance(batcher, BatcherComponent) and batcher.name == "batcher_p0" and batcher.per_batch == 2


def test_learner_worker_with_sf2_parameters_names_the_supported_way() -> None:
    with pytest.raises(TypeError, match=r"LearnerWorker\(evt_loop, cfg, env_info.*make_runner"):
        LearnerWorker(_sf2_loop(), _cfg(), None, object(), object(), 0)
    assert issubclass(LearnerWorker, LearnerWorkerComponent)


def test_init_learner_process_installs_the_context_and_learner_settings(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(sf2_constructors, "set_process_options", lambda *args: calls.append(args))
    previous = sf_global_context()
    context = SampleFactoryContext()
    obs_space = gym.spaces.Box(-1, 1, (4,), np.float32)
    worker = types.SimpleNamespace(
        name="learner_p2", policy_id=2, cfg=_cfg(), env_info=types.SimpleNamespace(obs_space=obs_space)
    )
    try:
        init_learner_process(context, worker)
        assert global_model_factory() is context.model_factory
        assert global_env_registry() is context.env_registry
    finally:
        sf2_constructors.set_global_context(previous)
    ((cfg, spec, worker_idx, space),) = calls
    assert (cfg, spec.kind, spec.name, spec.policy_id, worker_idx, space) == (
        worker.cfg,
        "learner",
        "learner_p2",
        2,
        None,
        obs_space,
    )
    assert learner_worker_module.init_learner_process is init_learner_process
