"""What population-based training may change, and how: the mutable hyper-parameters and their bounds.

A mutation multiplies a value by a factor ``f`` drawn uniformly from [``--pbt_perturb_min``, ``--pbt_perturb_max``]
or divides it by ``f`` (each with probability 1/2), then clamps it into the parameter's bounds. Multiplicative steps
suit parameters that matter on a log scale (a learning rate of 1e-4 vs 3e-4), keep the sign, and leave a term that
is switched off (0, e.g. ``--max_grad_norm=0``) switched off.

The discount is mutated through its horizon ``1 / (1 - gamma)`` (0.99 -> 100 steps), where a multiplicative step
means the same thing whether gamma is 0.9 or 0.999; only with ``--pbt_optimize_gamma``.

Reward-shaping coefficients (an env's ``get_default_reward_shaping()``, a possibly nested dict of numbers) are
mutated the same way, each kept within a factor of 100 of the env's default for that term, so the shape of the
reward cannot drift into a scale the env's author never meant.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sample_factory.algo.learning.pbt_exchange import (
    GAMMA_BOUNDS,
    HYPERPARAMETER_BOUNDS,
    REWARD_SHAPING_RANGE,
    mutable_hyperparameters,
)
from sample_factory.utils.typing import Config


def perturbation_factor(cfg: Config, rng: random.Random) -> float:
    """A factor in [perturb_min, perturb_max] or its inverse, each half of the time."""
    factor = rng.uniform(cfg.pbt_perturb_min, cfg.pbt_perturb_max)
    return factor if rng.random() < 0.5 else 1.0 / factor


def perturb_value(value: float, factor: float, bounds: tuple[float, float]) -> float:
    """``value * factor`` clamped into ``bounds`` (by magnitude, keeping the sign); 0 stays 0."""
    if value == 0.0:
        return 0.0
    low, high = bounds
    magnitude = min(max(abs(value) * factor, low), high)
    return math.copysign(magnitude, value)


def perturb_gamma(gamma: float, factor: float) -> float:
    """Scale the horizon ``1 / (1 - gamma)`` by ``factor``; the result stays within ``GAMMA_BOUNDS``."""
    horizon = 1.0 / max(1.0 - gamma, 1e-9)
    new_gamma = 1.0 - 1.0 / (horizon * factor)
    return min(max(new_gamma, GAMMA_BOUNDS[0]), GAMMA_BOUNDS[1])


@dataclass
class Change:
    """One mutated value, for the log line and the tests: ``name`` is dotted for nested reward-shaping terms."""

    name: str
    old: float
    new: float


def mutate_hyperparameters(
    params: dict[str, float], cfg: Config, rng: random.Random, rate: float | None = None
) -> tuple[dict[str, float], list[Change]]:
    """Each mutable parameter changes with probability ``rate`` (default ``--pbt_mutation_rate``); returns the new
    dict and the changes."""
    rate = cfg.pbt_mutation_rate if rate is None else rate
    new_params = dict(params)
    changes = []
    for name in mutable_hyperparameters(cfg):
        if rng.random() >= rate:
            continue
        old = params[name]
        factor = perturbation_factor(cfg, rng)
        if name == "gamma":
            new = perturb_gamma(old, factor)
        else:
            new = perturb_value(old, factor, HYPERPARAMETER_BOUNDS[name])
        if new != old:
            new_params[name] = new
            changes.append(Change(name, old, new))
    return new_params, changes


def mutate_reward_shaping(
    scheme: dict[str, Any], default: dict[str, Any], cfg: Config, rng: random.Random, rate: float | None = None
) -> tuple[dict[str, Any], list[Change]]:
    """Each numeric term of ``scheme`` (nested dicts included) changes with probability ``rate`` (default
    ``--pbt_mutation_rate``). ``default`` is the env's own scheme: it sets each term's bounds (module docstring).
    """
    rate = cfg.pbt_mutation_rate if rate is None else rate
    new_scheme = copy.deepcopy(scheme)
    changes: list[Change] = []

    def visit(node: dict[str, Any], reference: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            ref = reference.get(key) if isinstance(reference, dict) else None
            if isinstance(value, dict):
                visit(value, ref if isinstance(ref, dict) else {}, f"{prefix}{key}.")
            elif _is_number(value) and rng.random() < rate:
                scale = abs(float(ref)) if _is_number(ref) and ref != 0 else abs(float(value))
                bounds = (scale / REWARD_SHAPING_RANGE, scale * REWARD_SHAPING_RANGE)
                new = perturb_value(float(value), perturbation_factor(cfg, rng), bounds)
                if new != value:
                    node[key] = new
                    changes.append(Change(f"{prefix}{key}", float(value), new))

    visit(new_scheme, default or {}, "")
    return new_scheme, changes


def flat_numbers(scheme: dict[str, Any] | None, prefix: str = "") -> dict[str, float]:
    """``{"a": {"b": 1}} -> {"a.b": 1.0}``: the numeric leaves of a reward-shaping scheme, for TensorBoard."""
    out: dict[str, float] = {}
    for key, value in (scheme or {}).items():
        if isinstance(value, dict):
            out.update(flat_numbers(value, f"{prefix}{key}."))
        elif _is_number(value):
            out[f"{prefix}{key}"] = float(value)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def describe_changes(changes: list[Change], fmt: Callable[[float], str] = lambda x: f"{x:.4g}") -> str:
    """``learning_rate 0.0001 -> 0.00013, gamma 0.99 -> 0.992``"""
    return ", ".join(f"{c.name} {fmt(c.old)} -> {fmt(c.new)}" for c in changes)
