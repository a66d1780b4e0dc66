"""PBT's mutations (bounds, probabilities, nested reward shaping) and its per-policy files."""

from __future__ import annotations

import json
import os
import random

import pytest

from sample_factory.algo.learning.pbt_exchange import (
    GAMMA_BOUNDS,
    HYPERPARAMETER_BOUNDS,
    REWARD_SHAPING_RANGE,
    hyperparameters_of,
    load_policy_hyperparameters,
    mutable_hyperparameters,
    policy_cfg_file,
    policy_reward_shaping_file,
    read_json,
    write_json_atomic,
)
from sample_factory.cfg.arguments import default_cfg
from sample_factory.pbt.mutation import (
    flat_numbers,
    mutate_hyperparameters,
    mutate_reward_shaping,
    perturb_gamma,
    perturb_value,
)


def _cfg(tmp_path=None, **overrides):
    cfg = default_cfg(env="pbt_test")
    cfg.with_pbt, cfg.num_policies = True, 4
    if tmp_path is not None:
        cfg.train_dir, cfg.experiment = str(tmp_path), "exp"
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


def test_every_mutation_factor_is_within_the_perturbation_range():
    cfg, rng = _cfg(pbt_mutation_rate=1.0, pbt_perturb_min=1.1, pbt_perturb_max=1.5), random.Random(0)
    base = hyperparameters_of(cfg)
    ups = downs = 0
    for _ in range(300):
        new, changes = mutate_hyperparameters(base, cfg, rng)
        for change in changes:
            ratio = change.new / change.old
            low, high = HYPERPARAMETER_BOUNDS[change.name]
            if low < change.new < high:  # not clamped: the factor itself is visible
                assert 1.1 - 1e-9 <= ratio <= 1.5 + 1e-9 or 1 / 1.5 - 1e-9 <= ratio <= 1 / 1.1 + 1e-9, change
            ups += ratio > 1
            downs += ratio < 1
        assert new["gamma"] == base["gamma"]  # only with --pbt_optimize_gamma
    assert ups > 100 and downs > 100  # both directions, about half each


def test_mutation_rate_is_the_probability_of_each_change():
    cfg, rng = _cfg(pbt_mutation_rate=0.25), random.Random(1)
    base = hyperparameters_of(cfg)
    num_changes = sum(len(mutate_hyperparameters(base, cfg, rng)[1]) for _ in range(400))
    expected = 0.25 * 400 * len(mutable_hyperparameters(cfg))
    assert abs(num_changes - expected) < 0.15 * expected
    assert mutate_hyperparameters(base, _cfg(pbt_mutation_rate=0.0), rng)[1] == []


def test_repeated_mutations_stay_within_bounds_and_zero_stays_zero():
    cfg, rng = (
        _cfg(pbt_mutation_rate=1.0, pbt_perturb_min=1.5, pbt_perturb_max=3.0, pbt_optimize_gamma=True),
        random.Random(2),
    )
    params = hyperparameters_of(cfg)
    params["max_grad_norm"] = 0.0  # clipping off: a mutation must not switch it on
    for _ in range(500):
        params, _ = mutate_hyperparameters(params, cfg, rng)
        for name, (low, high) in HYPERPARAMETER_BOUNDS.items():
            if name != "max_grad_norm":
                assert low <= params[name] <= high, (name, params[name])
        assert GAMMA_BOUNDS[0] <= params["gamma"] <= GAMMA_BOUNDS[1]
    assert params["max_grad_norm"] == 0.0


def test_gamma_moves_along_its_horizon():
    assert perturb_gamma(0.99, 2.0) == pytest.approx(0.995)  # horizon 100 -> 200
    assert perturb_gamma(0.99, 0.5) == pytest.approx(0.98)  # horizon 100 -> 50
    assert perturb_gamma(0.95, 0.1) == GAMMA_BOUNDS[0]


def test_perturb_value_keeps_the_sign_and_clamps_the_magnitude():
    assert perturb_value(-2.0, 1.5, (0.1, 10.0)) == -3.0
    assert perturb_value(-2.0, 100.0, (0.1, 10.0)) == -10.0
    assert perturb_value(0.0, 1.5, (0.1, 10.0)) == 0.0


def test_nested_reward_shaping_is_mutated_within_a_range_of_the_default():
    default = {"frag": 1.0, "death": -0.5, "pickups": {"health": 0.02, "armor": 0.0}, "name": "not a number"}
    cfg, rng = _cfg(pbt_mutation_rate=1.0, pbt_perturb_min=2.0, pbt_perturb_max=3.0), random.Random(3)
    scheme = default
    all_changed = set()
    for _ in range(200):
        scheme, changes = mutate_reward_shaping(scheme, default, cfg, rng)
        all_changed.update(c.name for c in changes)
    assert all_changed == {"frag", "death", "pickups.health"}  # 0 stays 0, strings untouched
    for name, value in flat_numbers(scheme).items():
        reference = flat_numbers(default)[name]
        if reference:
            assert abs(reference) / REWARD_SHAPING_RANGE <= abs(value) <= abs(reference) * REWARD_SHAPING_RANGE
            assert (value < 0) == (reference < 0)
    assert scheme["name"] == "not a number" and default["frag"] == 1.0  # the input is not modified


def test_policy_files_round_trip_and_refuse_what_they_do_not_know(tmp_path):
    cfg = _cfg(tmp_path)
    os.makedirs(os.path.join(str(tmp_path), "exp"))
    params = hyperparameters_of(cfg)
    params["learning_rate"] = 3e-4
    write_json_atomic(policy_cfg_file(cfg, 2), params)
    assert os.path.basename(policy_cfg_file(cfg, 2)) == "policy_02_cfg.json"
    assert os.path.basename(policy_reward_shaping_file(cfg, 11)) == "policy_11_reward_shaping.json"
    assert load_policy_hyperparameters(cfg, 2, hyperparameters_of(cfg)) == params
    assert load_policy_hyperparameters(cfg, 3, hyperparameters_of(cfg)) is None
    assert not [f for f in os.listdir(os.path.join(str(tmp_path), "exp")) if ".tmp" in f]  # no leftover temp file

    with open(policy_cfg_file(cfg, 1), "w") as f:
        json.dump({"learning_rat": 1e-3}, f)
    with pytest.raises(ValueError, match=r"policy_01_cfg.json: \['learning_rat'\] are not PBT hyper-parameters"):
        load_policy_hyperparameters(cfg, 1, hyperparameters_of(cfg))
    with open(policy_cfg_file(cfg, 0), "w") as f:
        f.write("{broken")
    with pytest.raises(ValueError, match="policy_00_cfg.json is not valid JSON"):
        read_json(policy_cfg_file(cfg, 0))
