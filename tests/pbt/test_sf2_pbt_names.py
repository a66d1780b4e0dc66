"""Sample Factory 2's PBT helpers: single-value perturbations and the names of the messages PBT sends learners."""

from __future__ import annotations

import random

import pytest

from sample_factory.algo.learning.learner_worker import LearnerWorker
from sample_factory.pbt.population_based_training import (
    load_model_signal,
    perturb_batch_size,
    perturb_exponential_decay,
    perturb_float,
    perturb_vtrace,
    save_model_signal,
    update_cfg_signal,
)
from sample_factory.utils.attr_dict import AttrDict


def test_perturb_float_multiplies_or_divides_by_the_amount() -> None:
    rng = random.Random(3)
    values = {round(perturb_float(10.0, perturb_amount=2.0, rng=rng), 9) for _ in range(50)}
    assert values == {5.0, 20.0}
    random.seed(0)
    assert perturb_float(1.0) in (pytest.approx(1.2), pytest.approx(1 / 1.2))


def test_perturb_vtrace_takes_small_steps() -> None:
    rng = random.Random(1)
    ratios = {round(perturb_vtrace(1.0, AttrDict(), rng=rng), 9) for _ in range(50)}
    assert ratios == {round(1.005, 9), round(1 / 1.005, 9)}


def test_perturb_exponential_decay_scales_the_horizon() -> None:
    rng = random.Random(5)
    for _ in range(200):
        new = perturb_exponential_decay(0.99, AttrDict(), 1.1, 1.3, rng=rng)
        ratio = (1 - 0.99) / (1 - new)  # horizon ratio
        assert 1.1 - 1e-9 <= ratio <= 1.3 + 1e-9 or 1 / 1.3 - 1e-9 <= ratio <= 1 / 1.1 + 1e-9
    low = [perturb_exponential_decay(0.01, AttrDict(), rng=rng) for _ in range(100)]
    assert all(0.0 <= value < 1.0 for value in low)


def test_perturb_batch_size_keeps_whole_rollouts_within_bounds() -> None:
    cfg = AttrDict(batch_size=1024, rollout=32)
    rng = random.Random(2)
    x = 1024
    seen = set()
    for _ in range(300):
        x = perturb_batch_size(x, cfg, rng=rng)
        assert x % 32 == 0 and 512 <= x <= 2048
        seen.add(x)
    assert min(seen) == 512 and max(seen) == 2048  # a random walk reaches both bounds
    assert perturb_batch_size(32, AttrDict(batch_size=32, rollout=32), rng=rng) == 32


@pytest.mark.parametrize(
    ("signal", "message"),
    [
        (save_model_signal, "on_pbt_share_weights"),
        (load_model_signal, "on_pbt_take_weights"),
        (update_cfg_signal, "on_pbt_hyperparameters"),
    ],
)
def test_signals_name_a_learner_message_that_exists(signal, message: str) -> None:
    assert signal(3) == f"learner_p3.{message}"
    assert callable(getattr(LearnerWorker, signal(0).rsplit(".", 1)[1]))
