"""The learner's torch thread count: the flag when given, every core when it trains while sampling waits."""

from __future__ import annotations

import pytest

from sample_factory.algo.learning import learner_threads
from sample_factory.algo.learning.learner_threads import learner_num_threads
from sample_factory.cfg.arguments import default_cfg


def cfg_with(explicit: dict | None = None, **flags):
    cfg = default_cfg(env="x")
    cfg.device = "cpu"
    for name, value in {**flags, **(explicit or {})}.items():
        setattr(cfg, name, value)
    cfg.cli_args = {**cfg.cli_args, **(explicit or {})}
    return cfg


@pytest.fixture(autouse=True)
def four_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(learner_threads, "available_cores", lambda: 4)


def test_sync_single_policy_learner_trains_on_every_core() -> None:
    threads, why = learner_num_threads(cfg_with(async_rl=False), 0, serial=False)
    assert threads == 4 and "sync mode" in why


@pytest.mark.parametrize(
    ("flags", "serial"),
    [({"async_rl": True}, False), ({"async_rl": False, "num_policies": 2}, False), ({"async_rl": False}, True)],
    ids=["async", "two_policies", "serial"],
)
def test_runs_that_sample_while_training_keep_the_default(flags: dict, serial: bool) -> None:
    assert learner_num_threads(cfg_with(**flags), 0, serial=serial)[0] == 1


def test_an_explicit_flag_always_wins() -> None:
    cfg = cfg_with({"learner_main_loop_num_cores": 1}, async_rl=False)
    assert learner_num_threads(cfg, 0, serial=False) == (1, "--learner_main_loop_num_cores=1")
