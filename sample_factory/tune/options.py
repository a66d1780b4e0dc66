"""The tuner's own flags, and the command lines it builds from the user's.

Every flag the tuner does not know is the user's training flag: it goes, unchanged and in order, into every trial
and into the recommended command. Trials append their own flags after the user's (argparse keeps the last value),
so a trial never writes into the user's ``--train_dir``/``--experiment`` and never logs to Weights & Biases; the
recommended command drops the user's values of the knobs the tuner chose, so each flag appears once.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files

from sample_factory.tune.search import Settings
from sample_factory.utils.flag_table import FlagTable, read_flag_table
from sample_factory.utils.utils import str2bool

# Per-trial overrides: a fresh experiment per trial, no early stop by the user's step or time limits (the tuner
# decides when a trial ends), no remote logging.
TRIAL_ONLY_FLAGS = ("--benchmark=True", "--with_wandb=False", "--train_for_env_steps=10000000000",
                    "--train_for_seconds=10000000000")  # fmt: skip


@dataclass
class TuneOptions:
    train_script: str
    env: str
    tune_seconds: float
    user_flags: list[str]
    tune_batch_size: bool = False
    min_gain: float = 0.05
    warmup_s: float | None = None
    measure_s: float | None = None

    def warmup(self) -> float:
        """Seconds after sampling starts before the FPS counts: workers fill their buffers, the learner compiles."""
        return self.warmup_s if self.warmup_s is not None else min(10.0, max(2.0, self.tune_seconds / 30))

    def measure(self) -> float:
        """Seconds of steady-state sampling per trial: longer is less noisy, shorter leaves room for more trials."""
        return self.measure_s if self.measure_s is not None else min(30.0, max(4.0, self.tune_seconds / 15))


@functools.cache
def tune_flags() -> FlagTable:
    """The tuner's own flags (``flags.tsv`` of this package)."""
    return read_flag_table(files(__package__), {"float": float, "str2bool": str2bool})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sample_factory.tune",
        description="Find the fastest sampling settings for a training command on this machine. Every flag not "
        "listed here is a training flag, passed unchanged to the trials and to the recommended command.",
        allow_abbrev=False,  # a training flag must never be taken for an abbreviation of a tuner flag
    )
    tune_flags().add_flags(parser, "tune")
    return parser


def parse_tune_args(argv: Sequence[str] | None = None) -> TuneOptions:
    args, user_flags = build_parser().parse_known_args(sys.argv[1:] if argv is None else list(argv))
    if args.tune_seconds <= 0:
        raise SystemExit(f"--tune_seconds={args.tune_seconds} must be > 0 (the tuning budget in seconds, e.g. 300)")
    if not 0 <= args.tune_min_gain < 1:
        raise SystemExit(f"--tune_min_gain={args.tune_min_gain} must be a fraction in [0, 1), e.g. 0.05")
    return TuneOptions(
        train_script=args.train_script,
        env=args.env,
        tune_seconds=args.tune_seconds,
        user_flags=user_flags,
        tune_batch_size=args.tune_batch_size,
        min_gain=args.tune_min_gain,
        warmup_s=args.tune_warmup_seconds,
        measure_s=args.tune_measure_seconds,
    )


def trial_command(opts: TuneOptions, settings: Settings | None, train_dir: str, experiment: str) -> list[str]:
    """The command of one trial: the user's flags, then the trial's settings and trial-only flags (last wins)."""
    chosen = settings.flags(with_batch_size=opts.tune_batch_size) if settings is not None else []
    trial = [f"--train_dir={train_dir}", f"--experiment={experiment}", *TRIAL_ONLY_FLAGS]
    return [sys.executable, "-m", opts.train_script, f"--env={opts.env}", *opts.user_flags, *chosen, *trial]


def recommended_args(opts: TuneOptions, settings: Settings) -> list[str]:
    """``--env``, the user's flags without the ones the tuner sets, then the chosen settings."""
    chosen = settings.flags(with_batch_size=opts.tune_batch_size)
    names = {flag.split("=", 1)[0] for flag in chosen}
    return [f"--env={opts.env}", *drop_flags(opts.user_flags, names), *chosen]


def recommended_command(opts: TuneOptions, settings: Settings) -> str:
    return shlex.join(["python", "-m", opts.train_script, *recommended_args(opts, settings)])


def drop_flags(flags: list[str], names: set[str]) -> list[str]:
    """``flags`` without the single-valued flags ``names``, written ``--name=value`` or ``--name value``."""
    kept, skip_value = [], False
    for token in flags:
        if skip_value:
            skip_value = False
            if not token.startswith("--"):
                continue
        name, has_value = token.split("=", 1)[0], "=" in token
        if name in names:
            skip_value = not has_value
            continue
        kept.append(token)
    return kept
