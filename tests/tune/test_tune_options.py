"""The tuner's flags, the trials' command lines and the recommended command."""

from __future__ import annotations

import sys

import pytest

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.tune.options import drop_flags, parse_tune_args, recommended_args, trial_command
from sample_factory.tune.search import Settings

ARGV = ["--train_script=sf_examples.train_gym_env", "--env", "CartPole-v1", "--tune_seconds=60", "--num_workers", "8",
        "--experiment=mine", "--train_dir=/data/runs", "--batch_size=512", "--device=cpu"]  # fmt: skip
CHOSEN = Settings(4, 16, 2, True, 1, 1024)


def test_unknown_flags_are_the_users_training_flags():
    opts = parse_tune_args(ARGV)
    assert (opts.train_script, opts.env, opts.tune_seconds, opts.tune_batch_size) == (
        "sf_examples.train_gym_env", "CartPole-v1", 60.0, False,
    )  # fmt: skip
    assert opts.user_flags == ARGV[4:]


def test_bad_budget_is_refused_with_the_fix():
    with pytest.raises(SystemExit, match="--tune_seconds=0.0 must be > 0"):
        parse_tune_args(["--train_script=m", "--env=e", "--tune_seconds=0"])


def test_drop_flags_handles_both_spellings():
    assert drop_flags(["--a", "1", "--b=2", "--c=3", "--a=4"], {"--a"}) == ["--b=2", "--c=3"]
    assert drop_flags(["--flag", "--b=2"], {"--flag"}) == ["--b=2"]  # a flag without a value keeps the next one


def test_trials_never_write_to_the_users_folders():
    cmd = trial_command(parse_tune_args(ARGV), CHOSEN, "/tmp/sf_tune_x", "trial_03")
    assert cmd[:4] == [sys.executable, "-m", "sf_examples.train_gym_env", "--env=CartPole-v1"]
    parser, _ = parse_sf_args(cmd[3:])
    cfg = parse_full_cfg(parser, cmd[3:])  # argparse keeps the last value: the trial's
    assert (cfg.train_dir, cfg.experiment, cfg.benchmark, cfg.num_workers) == ("/tmp/sf_tune_x", "trial_03", True, 4)
    assert cfg.batch_size == 512  # not tuned: the user's value stays


def test_recommended_command_keeps_the_users_flags_and_sets_each_knob_once():
    opts = parse_tune_args(ARGV)
    args = recommended_args(opts, CHOSEN)
    assert args == ["--env=CartPole-v1", "--experiment=mine", "--train_dir=/data/runs", "--batch_size=512",
                    "--device=cpu", *CHOSEN.flags()]  # fmt: skip
    parser, _ = parse_sf_args(args)
    cfg = parse_full_cfg(parser, args)
    assert (cfg.num_workers, cfg.num_envs_per_worker, cfg.batched_sampling, cfg.batch_size) == (4, 16, True, 512)
    opts.tune_batch_size = True
    assert recommended_args(opts, CHOSEN)[-1] == "--batch_size=1024" and "--batch_size=512" not in recommended_args(
        opts, CHOSEN
    )
