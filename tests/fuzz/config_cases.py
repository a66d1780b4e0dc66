"""Seeded generators of command lines for the configuration fuzz.

Flags come from this folder's copy of the project's flag table (``cli_params.tsv``: flag, type, default, nargs,
choices) plus any flag the parser declares that the table lacks (e.g. the fault-tolerance flags), read from the
parser's own actions. Values are drawn per type: well-formed ones, and the wrong ones users type (words for numbers,
zero and negative counts, huge numbers, NaN, empty strings, unknown choices, bad booleans).
"""

from __future__ import annotations

import argparse
import os
import random
from dataclasses import dataclass
from pathlib import Path

from sample_factory.cfg.arguments import parse_sf_args
from sample_factory.utils.utils import str2bool

TSV = Path(__file__).with_name("cli_params.tsv")
# flags the fuzz leaves alone: where the run's files go (set per case) and what it trains on
FIXED = ("--env", "--train_dir", "--experiment")

BAD_INTS = ["abc", "1.5", "", "-1", "0", "99999999999999999999", "nan", "-99999999999", "0x10"]
BAD_FLOATS = ["abc", "", "nan", "inf", "-inf", "-1", "1e400", "0", "-1e30", "1,5"]
BAD_BOOLS = ["maybe", "", "2", "None", "tru"]
ODD_STRINGS = ["", "..", "/", " ", "a b", "ü", "x" * 300, "a\x00b", "--", "%(default)s"]


@dataclass(frozen=True)
class FlagSpec:
    flag: str
    type: str  # int, float, str, str2bool, flag
    nargs: str  # "" or "*"
    choices: tuple[str, ...]
    from_tsv: bool = True


def _tsv_specs() -> list[FlagSpec]:
    specs = []
    for line in TSV.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        flag, type_, _default, nargs, choices, *note = line.split("\t")
        if note and "evaluation/enjoy only" in note[0]:
            continue  # declared only by parse_sf_args(evaluation=True)
        specs.append(FlagSpec(flag, type_, nargs, tuple(choices.split(",")) if choices else ()))
    return specs


def _type_name(action: argparse.Action) -> str:
    if action.type is str2bool:
        return "str2bool"
    return getattr(action.type, "__name__", "str")


def _parser_only_specs(known: set[str]) -> list[FlagSpec]:
    parser, _ = parse_sf_args([])
    specs = []
    for action in parser._actions:  # noqa: SLF001 (argparse has no public list of its actions)
        flag = next((s for s in action.option_strings if s.startswith("--")), None)
        if flag is None or flag in known or action.type is None:
            continue
        nargs = "*" if action.nargs == "*" else ""
        specs.append(FlagSpec(flag, _type_name(action), nargs, tuple(action.choices or ()), from_tsv=False))
    return specs


def flag_specs() -> list[FlagSpec]:
    """Every flag the fuzz may set: the table's, then the parser's own that the table lacks."""
    specs = [spec for spec in _tsv_specs() if spec.flag not in FIXED]
    return specs + _parser_only_specs({spec.flag for spec in specs} | set(FIXED))


def good_value(spec: FlagSpec, rng: random.Random) -> str:
    if spec.choices:
        return rng.choice(spec.choices)
    if spec.type == "int":
        return str(rng.choice([1, 2, 4, rng.randint(1, 64)]))
    if spec.type == "float":
        return f"{rng.choice([0.5, 1e-4, rng.random()]):.6g}"
    if spec.type == "str2bool":
        return rng.choice(["True", "False", "true", "0", "1", "yes", "no"])
    return rng.choice(["x", "abc_def", "run-1"])


def bad_value(spec: FlagSpec, rng: random.Random) -> str:
    if spec.choices:
        return rng.choice(["unknown_choice", "", spec.choices[0].upper() + "X"])
    pool = {"int": BAD_INTS, "float": BAD_FLOATS, "str2bool": BAD_BOOLS}.get(spec.type, ODD_STRINGS)
    return rng.choice(pool)


def flag_args(spec: FlagSpec, value: str, rng: random.Random) -> list[str]:
    """One flag as a user would type it; list flags take zero or more space-separated items."""
    if spec.nargs == "*":
        return [spec.flag, *([] if rng.random() < 0.2 else value.split() or [value])]
    if spec.type == "flag":
        return [spec.flag]
    return [f"{spec.flag}={value}"]


def config_case(rng: random.Random, specs: list[FlagSpec], tmp_path: Path) -> tuple[list[FlagSpec], list[str]]:
    """2-4 random flags (sometimes one), each with a good or a bad value; returns them and the argv."""
    picked = rng.sample(specs, rng.choice([1, 2, 2, 3, 4]))
    argv = ["--env=CartPole-v1", f"--train_dir={tmp_path}", "--experiment=fuzz", "--device=cpu"]
    for spec in picked:
        value = good_value(spec, rng) if rng.random() < 0.5 else bad_value(spec, rng)
        argv += flag_args(spec, value, rng)
    return picked, argv


# ---- configs that a tiny serial run can afford: random values of flags that shape learning, not the budget
SAFE_CHOICES = {
    "--gamma": ["0.9", "0.99", "1.0", "0.0"],
    "--gae_lambda": ["0.0", "0.9", "1.0"],
    "--learning_rate": ["0", "1e-5", "0.001", "0.5"],
    "--ppo_clip_ratio": ["0.05", "0.3", "10"],
    "--ppo_clip_value": ["0.1", "5"],
    "--max_grad_norm": ["0", "-1", "0.1", "100"],
    "--exploration_loss": ["entropy", "symmetric_kl"],
    "--exploration_loss_coeff": ["0", "0.1"],
    "--value_loss_coeff": ["0", "2"],
    "--reward_scale": ["0", "-1", "100"],
    "--reward_clip": ["0.1", "1e9"],
    "--normalize_returns": ["True", "False"],
    "--normalize_input": ["True", "False"],
    "--value_bootstrap": ["True", "False"],
    "--optimizer": ["adam", "lamb"],
    "--lr_schedule": ["constant", "kl_adaptive_minibatch", "kl_adaptive_epoch", "linear_decay"],
    "--use_rnn": ["True", "False"],
    "--rnn_type": ["gru", "lstm"],
    "--rnn_size": ["1", "8", "33"],
    "--rnn_num_layers": ["1", "2"],
    "--encoder_mlp_layers": ["", "1", "16 8", "7"],
    "--decoder_mlp_layers": ["", "3", "8 8"],
    "--nonlinearity": ["elu", "relu", "tanh"],
    "--policy_initialization": ["orthogonal", "xavier_uniform", "torch_default"],
    "--actor_critic_share_weights": ["True", "False"],
    "--num_epochs": ["1", "3"],
    "--shuffle_minibatches": ["True", "False"],
    "--async_rl": ["True", "False"],
    "--seed": ["0", "123456789"],
    "--stats_avg": ["1", "1000"],
    "--max_policy_lag": ["0", "1", "100000"],
    "--obs_subtract_mean": ["0", "1.5"],
    "--obs_scale": ["-2", "1000"],
}


def safe_run_case(rng: random.Random, tmp_path: Path) -> list[str]:
    """A tiny serial CartPole run (a few hundred env steps) with 2-4 learning flags drawn at random."""
    argv = [
        "--env=CartPole-v1", f"--train_dir={tmp_path}", "--experiment=fuzz_run", "--device=cpu",
        "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=2", "--worker_num_splits=2",
        "--rollout=8", "--recurrence=8", "--batch_size=32", "--train_for_env_steps=320",
        "--decorrelate_experience_max_seconds=0", "--log_to_file=False",
    ]  # fmt: skip
    for flag in rng.sample(sorted(SAFE_CHOICES), rng.randint(2, 4)):
        value = rng.choice(SAFE_CHOICES[flag])
        argv += [flag, *value.split()] if flag.endswith("_layers") else [f"{flag}={value}"]
    return argv


if __name__ == "__main__":  # print a few cases: python tests/fuzz/config_cases.py
    for seed in range(5):
        print(config_case(random.Random(seed), flag_specs(), Path(os.getcwd()))[1])
