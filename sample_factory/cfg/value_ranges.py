"""Value ranges of the numeric flags: a value argparse accepts but no run can use is refused before the run starts.

argparse only checks that ``--gamma`` is a float; ``--gamma=nan`` or ``--gamma=-3`` would start a run that trains on
garbage (NaN losses after the first step) or fails minutes later deep inside the learner. Each rule here names the
flag, the valid range and, where it helps, a typical value. Zero and negative values that a flag documents as a
setting (``--max_grad_norm<=0`` turns clipping off, ``--learning_rate=0`` freezes the weights) stay accepted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sample_factory.utils.flags import flag_value
from sample_factory.utils.typing import Config

# float flags for which infinity means "no limit" (a clip that never clips); NaN is refused everywhere
INFINITY_ALLOWED = ("reward_clip", "max_grad_norm", "ppo_clip_value")


@dataclass(frozen=True)
class Rule:
    """``--name`` must satisfy ``ok``; ``requirement`` completes the sentence "--name=value ..."."""

    name: str
    ok: Callable[[Any], bool]
    requirement: str


def _unit(x: float) -> bool:
    return 0.0 <= x <= 1.0


def _positive(x: float) -> bool:
    return x > 0


def _non_negative(x: float) -> bool:
    return x >= 0


RULES: tuple[Rule, ...] = (
    Rule("gamma", _unit, "is a discount factor: use a value in [0, 1], e.g. 0.99"),
    Rule("gae_lambda", _unit, "must be in [0, 1], e.g. 0.95"),
    Rule("learning_rate", _non_negative, "must be >= 0 (0 freezes the weights), e.g. 0.0001"),
    Rule("adam_eps", _positive, "must be > 0 (it keeps Adam's division finite), e.g. 1e-6"),
    Rule("adam_beta1", lambda x: 0.0 <= x < 1.0, "is a decay rate: use a value in [0, 1), e.g. 0.9"),
    Rule("adam_beta2", lambda x: 0.0 <= x < 1.0, "is a decay rate: use a value in [0, 1), e.g. 0.999"),
    Rule("ppo_clip_ratio", _positive, "must be > 0, e.g. 0.1"),
    Rule("ppo_clip_value", _positive, "must be > 0, e.g. 1.0"),
    Rule("vtrace_rho", _positive, "must be > 0 (a truncation level of importance weights), e.g. 1.0"),
    Rule("vtrace_c", _positive, "must be > 0 (a truncation level of importance weights), e.g. 1.0"),
    Rule("value_loss_coeff", _non_negative, "must be >= 0, e.g. 0.5"),
    Rule("exploration_loss_coeff", _non_negative, "must be >= 0, e.g. 0.003"),
    Rule("kl_loss_coeff", _non_negative, "must be >= 0, e.g. 0.0"),
    Rule("reward_clip", _positive, "must be > 0 (rewards are clipped to [-reward_clip, reward_clip]), e.g. 1000"),
    Rule("lr_schedule_kl_threshold", _positive, "must be > 0, e.g. 0.008"),
    Rule("lr_adaptive_min", _positive, "must be > 0, e.g. 1e-6"),
    Rule("lr_adaptive_max", _positive, "must be > 0, e.g. 0.01"),
    Rule("initial_stddev", _positive, "must be > 0 (a standard deviation), e.g. 1.0"),
    Rule("obs_scale", lambda x: x != 0, "must not be 0 (observations are divided by it), e.g. 255 for images"),
    Rule("rnn_size", _positive, "must be >= 1, e.g. 512"),
    Rule("rnn_num_layers", _positive, "must be >= 1"),
    Rule("policy_workers_per_policy", _positive, "must be >= 1"),
    Rule("num_batches_to_accumulate", _positive, "must be >= 1, e.g. 2"),
    Rule("stats_avg", _positive, "must be >= 1 (episodes in the moving averages), e.g. 100"),
    Rule("env_frameskip", _positive, "must be >= 1 (1: no frame skipping)"),
    Rule("env_framestack", _positive, "must be >= 1 (1: no frame stacking)"),
    Rule("learner_main_loop_num_cores", _positive, "must be >= 1"),
    Rule("heartbeat_interval", _positive, "must be >= 1 (seconds)"),
    Rule("experiment_summaries_interval", _positive, "must be >= 1 (seconds)"),
    Rule("flush_summaries_interval", _positive, "must be >= 1 (seconds)"),
    Rule("reset_timeout_seconds", _positive, "must be >= 1 (seconds)"),
    Rule("max_policy_lag", _non_negative, "must be >= 0 (policy versions), e.g. 1000"),
    Rule("decorrelate_experience_max_seconds", _non_negative, "must be >= 0 (0: no delay)"),
    Rule("train_for_env_steps", _non_negative, "must be >= 0"),
    Rule("train_for_seconds", _non_negative, "must be >= 0"),
    Rule("save_every_sec", _non_negative, "must be >= 0 (seconds)"),
    Rule("save_best_every_sec", _non_negative, "must be >= 0 (seconds)"),
    Rule("save_best_after", _non_negative, "must be >= 0 (env steps)"),
    Rule("eval_every_env_steps", _non_negative, "must be >= 0 (env steps; 0 turns the evaluator off)"),
    Rule("eval_episodes", _positive, "must be >= 1, e.g. 10"),
    Rule("eval_num_envs", _positive, "must be >= 1, e.g. 4"),
)

# list flags whose every entry is a layer width
LAYER_LIST_FLAGS = ("encoder_mlp_layers", "encoder_conv_mlp_layers", "decoder_mlp_layers")


def value_range_problems(cfg: Config) -> list[str]:
    """One line per flag whose value is out of its range; NaN in any float flag, infinity in most."""
    problems = _non_finite_problems(cfg)
    bad_floats = {line.split("=", 1)[0][2:] for line in problems}
    for rule in RULES:
        value = flag_value(cfg, rule.name)
        if isinstance(value, (int, float)) and rule.name not in bad_floats and not rule.ok(value):
            problems.append(f"--{rule.name}={value} {rule.requirement}")
    problems += _layer_problems(cfg)
    if not problems:
        problems += _pair_problems(cfg)
    return problems


def _non_finite_problems(cfg: Config) -> list[str]:
    problems = []
    for name, value in sorted(vars(cfg).items()):
        if not isinstance(value, float) or math.isfinite(value):
            continue
        if math.isinf(value) and value > 0 and name in INFINITY_ALLOWED:
            continue
        problems.append(f"--{name}={value} must be a finite number")
    return problems


def _layer_problems(cfg: Config) -> list[str]:
    problems = []
    for name in LAYER_LIST_FLAGS:
        layers = flag_value(cfg, name) or []
        if any(width < 1 for width in layers):
            problems.append(
                f"--{name}={' '.join(map(str, layers))}: every layer width must be >= 1, e.g. --{name} 512 512"
            )
    return problems


def _pair_problems(cfg: Config) -> list[str]:
    low, high = cfg.lr_adaptive_min, cfg.lr_adaptive_max
    if low is not None and high is not None and low > high:
        return [f"--lr_adaptive_min={low} must be <= --lr_adaptive_max={high}"]
    return []
