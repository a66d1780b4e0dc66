"""The evaluator example: the long-pole variant is another physics with the same spaces, and a short run evaluates
on it, with summaries, eval.csv rows and a best checkpoint chosen by the evaluation score."""

from __future__ import annotations

import csv
from pathlib import Path

from example_helpers import assert_trained, run_module, train_args
from tb_events import read_scalars

from sf_examples.train_with_evaluator import EVAL_ENV, POLE_SCALE, make_cartpole, make_long_pole_cartpole

TRAIN = "sf_examples.train_with_evaluator"


def test_the_long_pole_variant_has_the_spaces_of_cartpole_and_other_physics():
    standard, long_pole = make_cartpole("cartpole_train"), make_long_pole_cartpole(EVAL_ENV)
    assert standard.observation_space == long_pole.observation_space
    assert standard.action_space == long_pole.action_space
    assert long_pole.unwrapped.length == POLE_SCALE * standard.unwrapped.length
    standard.reset(seed=3)
    long_pole.reset(seed=3)
    for _ in range(5):  # pushing right from the same state: the heavier, longer pole moves differently
        standard_obs, *_ = standard.step(1)
        long_obs, *_ = long_pole.step(1)
    assert abs(standard_obs[3] - long_obs[3]) > 0.05


def test_a_short_run_evaluates_on_the_long_pole(tmp_path: Path):
    flags = ("--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=4", "--eval_every_env_steps=2000",
             "--eval_episodes=3")  # fmt: skip
    result = run_module(TRAIN, *train_args(tmp_path, "long_pole", *flags, "--save_best_after=0", steps=6000))
    assert_trained(result)
    folder = tmp_path / "long_pole"
    with open(folder / "eval.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 2 and {row["eval_env"] for row in rows} == {EVAL_ENV}, rows
    points = read_scalars(str(folder / ".summary" / "0"))
    assert [step for step, _ in points["eval/avg_reward"]] == [int(row["env_steps"]) for row in rows]
    assert "eval/avg_episode_len" in points
    assert f"{EVAL_ENV}, sampled actions): avg reward" in result.output
    best = list((folder / "checkpoint_p0").glob("best_*_eval_avg_reward_*.pth"))
    assert len(best) == 1, result.explain()
