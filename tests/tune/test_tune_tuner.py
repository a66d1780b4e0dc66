"""The tuning loop with fake trials on a fake clock: budget, search, repeats, choice, failures."""

from __future__ import annotations

import json
import os

import pytest

from sample_factory.cfg.arguments import default_cfg
from sample_factory.cfg.config_io import cfg_dict
from sample_factory.tune.logparse import FpsFigure
from sample_factory.tune.options import TuneOptions
from sample_factory.tune.search import Machine, Settings, config_rejection
from sample_factory.tune.trial import TrialPlan, TrialResult
from sample_factory.tune.tuner import TuneError, Tuner

GIB = 2**30


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _flag_values(command: list[str]) -> dict[str, str]:
    return dict(arg[2:].split("=", 1) for arg in command if arg.startswith("--") and "=" in arg)


class FakeTrials:
    """Writes the trial's config.json as the real script would and reports ``fps_of(settings)`` after ``wall_s``."""

    def __init__(self, clock: FakeClock, fps_of, wall_s: float = 10.0, base_overrides: dict | None = None) -> None:
        self.clock, self.fps_of, self.wall_s = clock, fps_of, wall_s
        self.base_overrides = base_overrides or {}
        self.plans: list[TrialPlan] = []
        self.settings: list[Settings] = []

    def __call__(self, plan: TrialPlan) -> TrialResult:
        self.plans.append(plan)
        flags = _flag_values(plan.command)
        cfg = default_cfg(env="CartPole-v1", experiment=flags["experiment"])
        cfg.train_dir = flags["train_dir"]
        cfg.num_workers, cfg.num_envs_per_worker = 2, 4
        for name, value in {**self.base_overrides, **flags}.items():
            if hasattr(cfg, name) and name not in ("env",):
                setattr(cfg, name, type(getattr(cfg, name))(value == "True" if value in ("True", "False") else value))
        folder = os.path.join(cfg.train_dir, cfg.experiment)
        os.makedirs(folder)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(cfg_dict(cfg), f)
        settings = Settings.from_cfg(cfg)
        self.settings.append(settings)
        wall = min(self.wall_s, plan.deadline - self.clock.now)
        self.clock.now += wall
        fps = self.fps_of(settings)
        figure = FpsFigure(fps, "steady", (0.0, 1.0)) if fps else None
        return TrialResult(figure, 1.5, GIB, GIB // 8, GIB // 4, "learner.train 90%", wall, "ok", ["last line"])


def _opts(seconds: float, **kwargs) -> TuneOptions:
    return TuneOptions("sf_examples.train_gym_env", "CartPole-v1", seconds, ["--device=cpu"], **kwargs)


def _tune(seconds, fps_of, wall_s=10.0, cores=2, memory=64 * GIB, **kwargs):
    clock = FakeClock()
    trials = FakeTrials(clock, fps_of, wall_s)
    tuner = Tuner(_opts(seconds, **kwargs), Machine(cores, memory), runner=trials, clock=clock)
    return tuner.tune(), trials, tuner


def test_trials_fit_in_the_budget_and_the_baseline_runs_first():
    report, trials, tuner = _tune(45, lambda s: 1000.0)
    assert len(report.rows) == 4  # trials end at 10, 20, 30, 40 s; 5 s left is less than one trial
    assert report.rows[0].label == "baseline" and report.rows[0].settings == report.baseline
    assert report.wall_s <= 45
    assert all(plan.deadline <= tuner.budget.deadline for plan in trials.plans)
    assert not os.path.exists(tuner.train_dir)  # the temporary train_dir is gone
    assert len(set(trials.settings)) == len(trials.settings)  # no setting measured twice while moves were left
    tight, _, _ = _tune(41, lambda s: 1000.0)
    assert len(tight.rows) == 3  # at 30 s, 11 s left: a 10 s trial would only just fit, so none starts


def test_a_clearly_faster_setting_is_chosen_and_confirmed():
    report, trials, _ = _tune(100, lambda s: 1500.0 if s.batched_sampling else 1000.0)
    assert report.choice.settings.batched_sampling
    assert len(report.measurements[report.choice.settings]) >= 2  # repeated before being recommended
    assert "over your settings" in report.choice.reason


def test_a_gain_within_the_noise_keeps_the_users_settings():
    report, _, _ = _tune(60, lambda s: 1020.0 if s.num_envs_per_worker == 8 else 1000.0)
    assert report.choice.settings == report.baseline
    assert "only +2.0%" in report.choice.reason


def test_every_trial_passes_the_librarys_validation_and_the_machine_limits():
    report, trials, _ = _tune(300, lambda s: 1000.0 + s.num_workers, cores=2)
    base_cfg_like = default_cfg(env="CartPole-v1")
    for settings in trials.settings:
        assert settings.num_workers <= 8 and settings.policy_workers_per_policy == 1
        assert settings.batch_size == base_cfg_like.batch_size  # never changed without --tune_batch_size
        base_cfg_like.train_dir = "/tmp"
        assert config_rejection(settings, base_cfg_like) is None
    assert any("inference worker" in s.reason for s in report.skipped)


def test_batch_size_is_searched_only_when_asked():
    report, trials, _ = _tune(400, lambda s: 1000.0 + s.batch_size / 100, tune_batch_size=True)
    assert len({s.batch_size for s in trials.settings}) > 1


def test_a_baseline_without_fps_stops_with_the_reason():
    clock = FakeClock()
    tuner = Tuner(_opts(60), Machine(2, 64 * GIB), runner=FakeTrials(clock, lambda s: 0.0), clock=clock)
    with pytest.raises(TuneError, match="your training command itself fails"):
        tuner.tune()
