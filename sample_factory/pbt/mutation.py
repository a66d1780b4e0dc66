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


def scale_horizon(decay: float, factor: float) -> float:
    """The per-step decay whose horizon ``1 / (1 - decay)`` is ``factor`` times that of ``decay``."""
    horizon = 1.0 / max(1.0 - decay, 1e-9)
    return 1.0 - 1.0 / (horizon * factor)


def perturb_gamma(gamma: float, factor: float) -> float:
    """Scale the horizon ``1 / (1 - gamma)`` by ``factor``; the result stays within ``GAMMA_BOUNDS``."""
    return min(max(scale_horizon(gamma, factor), GAMMA_BOUNDS[0]), GAMMA_BOUNDS[1])


# ---- single-value perturbations with Sample Factory 2's names and parameters (``random``'s generator by default)
# V-trace's truncation levels bias the off-policy correction directly: they move in much smaller steps
VTRACE_PERTURB_AMOUNT = 1.005
# a perturbed batch size stays within this factor of --batch_size
BATCH_SIZE_RANGE = 2.0


def perturb_float(x: float, perturb_amount: float = 1.2, rng: random.Random | None = None) -> float:
    """``x * perturb_amount`` or ``x / perturb_amount``, each with probability 1/2 (keeps the sign; 0 stays 0)."""
    rng = rng or random
    return x / perturb_amount if rng.random() < 0.5 else x * perturb_amount


def perturb_vtrace(x: float, _cfg: Config, rng: random.Random | None = None) -> float:
    """A V-trace truncation level (``--vtrace_rho``, ``--vtrace_c``) moved by a factor of ``VTRACE_PERTURB_AMOUNT``."""
    return perturb_float(x, VTRACE_PERTURB_AMOUNT, rng)


def perturb_exponential_decay(
    x: float,
    _cfg: Config,
    perturb_amount_min: float = 1.01,
    perturb_amount_max: float = 1.2,
    rng: random.Random | None = None,
) -> float:
    """A per-step decay in [0, 1) (``gamma``, ``gae_lambda``) with its horizon ``1 / (1 - x)`` scaled by a factor
    drawn from [``perturb_amount_min``, ``perturb_amount_max``] or by its inverse, each half of the time.

    Scaling the horizon means the same change whether ``x`` is 0.9 or 0.999; the result stays in [0, 1).
    """
    rng = rng or random
    amount = rng.uniform(perturb_amount_min, perturb_amount_max)
    factor = amount if rng.random() < 0.5 else 1.0 / amount
    return min(max(scale_horizon(x, factor), 0.0), 1.0 - 1e-9)


def perturb_batch_size(x: int, cfg: Config, rng: random.Random | None = None) -> int:
    """A batch size moved by ``perturb_float``, rounded to whole trajectories (a multiple of ``--rollout``, which
    keeps it a multiple of ``--recurrence`` too) and kept within a factor ``BATCH_SIZE_RANGE`` of ``--batch_size``."""
    rollout = cfg.rollout
    new_value = perturb_float(float(x), rng=rng)
    low = max(rollout, math.ceil(cfg.batch_size / BATCH_SIZE_RANGE / rollout) * rollout)
    high = max(low, math.floor(cfg.batch_size * BATCH_SIZE_RANGE / rollout) * rollout)
    return int(min(max(round(new_value / rollout) * rollout, low), high))


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
