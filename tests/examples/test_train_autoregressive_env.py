"""The autoregressive-head example: its env pays what the documented ceilings say, a short run trains and
evaluates, and (``-m slow``) the autoregressive head gets past the factorized ceiling."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from example_helpers import assert_trained, run_module, train_args

from sf_examples.train_autoregressive_env import (
    AUTOREGRESSIVE_OPTIMUM,
    EPISODE_LEN,
    FACTORIZED_CEILING,
    NUM_CHOICES,
    EchoChoiceEnv,
)

TRAIN = "sf_examples.train_autoregressive_env"


def _mean_return(first: np.ndarray, second: np.ndarray) -> float:
    """Mean episode return when the env gets the pairs ``(first[e, t], second[e, t])`` ([episodes, EPISODE_LEN])."""
    env, total = EchoChoiceEnv(), 0.0
    for episode_first, episode_second in zip(first, second, strict=True):
        env.reset()
        for a1, a2 in zip(episode_first, episode_second, strict=True):
            total += env.step(np.array([a1, a2]))[1]
    return total / len(first)


def test_the_documented_ceiling_and_optimum_are_what_the_env_pays():
    assert FACTORIZED_CEILING == 3.75 and AUTOREGRESSIVE_OPTIMUM == 11.25
    rng, shape = np.random.default_rng(0), (2000, EPISODE_LEN)
    best_factorized = _mean_return(rng.integers(2, size=shape), np.zeros(shape, dtype=int))  # p=(1/2, 1/2, 0, 0)
    choices = rng.integers(NUM_CHOICES, size=shape)
    echo = _mean_return(choices, choices)
    assert abs(best_factorized - FACTORIZED_CEILING) < 0.15  # sd of a return ~1.7, over 2000 episodes
    assert abs(echo - AUTOREGRESSIVE_OPTIMUM) < 0.15


@pytest.mark.parametrize("seed", range(5))
def test_random_factorized_policies_stay_under_the_ceiling(seed: int):
    rng, shape = np.random.default_rng(100 + seed), (1000, EPISODE_LEN)
    p, q = rng.dirichlet(np.ones(NUM_CHOICES) * 0.5), rng.dirichlet(np.ones(NUM_CHOICES) * 0.5)
    expected = (EPISODE_LEN - 1) * float(np.sum(p * q * (1 - p)))  # the formula of the module docstring
    measured = _mean_return(rng.choice(NUM_CHOICES, size=shape, p=p), rng.choice(NUM_CHOICES, size=shape, p=q))
    assert expected <= FACTORIZED_CEILING
    assert abs(measured - expected) < 0.25


def _eval_rows(train_dir: Path, experiment: str) -> list[dict]:
    with open(train_dir / experiment / "eval.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_a_short_autoregressive_run_trains_and_evaluates(tmp_path: Path):
    flags = ("--serial_mode=True", "--num_workers=1", "--eval_every_env_steps=1000", "--eval_episodes=4")
    result = run_module(TRAIN, *train_args(tmp_path, "echo", *flags, steps=3000))
    assert_trained(result)
    rows = _eval_rows(tmp_path, "echo")
    assert len(rows) >= 2 and all(row["eval_env"] == "echo_choice" for row in rows), rows
    assert "avg_agree" in rows[0] and "avg_new_choice" in rows[0]


@pytest.mark.slow
def test_the_autoregressive_head_exceeds_the_factorized_ceiling(tmp_path: Path):
    result = run_module(TRAIN, *train_args(tmp_path, "echo_ar", "--seed=1", steps=150_000))
    assert_trained(result)
    best = max(float(row["avg_reward"]) for row in _eval_rows(tmp_path, "echo_ar"))
    assert best > FACTORIZED_CEILING + 1.0, best
