"""``do_eval`` and ``python -m sample_factory.eval``: many envs at once, exactly N whole episodes, one CSV row per
episode, no short-episode bias."""

from __future__ import annotations

import csv
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from lifecycle_helpers import captured_log, eval_cfg, fake_experiment
from sf_run import run_module

from sample_factory.eval import EVAL_RESULTS_FILE, ActorTracker, EpisodeBudget, do_eval
from sf_examples.gym.gym_utils import register_gym_env
from sf_examples.train_custom_multi_env import ENV_NAME, LineGoalsMultiEnv, register_multi_env_components


def _rows(train_dir: Path, experiment: str) -> list[dict[str, str]]:
    with open(train_dir / experiment / EVAL_RESULTS_FILE, newline="") as f:
        return list(csv.DictReader(f))


def test_cartpole_eval_writes_one_row_per_episode(tmp_path: Path) -> None:
    register_gym_env("CartPole-v1")
    env = gym.make("CartPole-v1")
    fake_experiment(tmp_path, "cp", "CartPole-v1", env.observation_space, env.action_space)
    flags = ("--max_num_episodes=13", "--num_workers=2", "--num_envs_per_worker=3", "--seed=3")
    with captured_log() as logs:
        status = do_eval(eval_cfg("CartPole-v1", tmp_path, "cp", *flags))
    assert status == 0, logs.text()
    rows = _rows(tmp_path, "cp")
    assert len(rows) == 13
    assert sorted(int(r["episode"]) for r in rows) == list(range(13))
    assert {int(r["env"]) for r in rows} == set(range(6))  # the episodes were spread over all six envs
    for row in rows:  # CartPole pays 1 per step and reports no separate objective
        assert float(row["reward"]) == float(row["true_objective"]) == int(row["length"]) > 0
    assert "Evaluated 13 episodes" in logs.text()


def test_multi_agent_eval_has_agent_and_extra_stat_columns(tmp_path: Path) -> None:
    register_multi_env_components()
    env = LineGoalsMultiEnv()
    fake_experiment(tmp_path, "ma", ENV_NAME, env.observation_space, env.action_space, custom_env_episode_len=30)
    status = do_eval(eval_cfg(ENV_NAME, tmp_path, "ma", "--max_num_episodes=9", "--num_workers=1"))
    assert status == 0
    rows = _rows(tmp_path, "ma")
    assert len(rows) == 9
    assert {int(r["agent"]) for r in rows} == set(range(env.num_agents))
    assert all(r["reached_goal"] in ("0", "1") and 1 <= int(r["length"]) <= 30 for r in rows)


def test_budget_counts_started_episodes_so_long_ones_are_not_dropped() -> None:
    """Actor 0 plays short episodes, actor 1 one long episode: the long one must be in the sample."""
    tracker = ActorTracker([1, 1], EpisodeBudget(4))
    assert list(tracker.episode) == [0, 1]
    for _ in range(3):  # actor 0 finishes episodes 0, 2, 3 while actor 1 is still in episode 1
        tracker.add(0, 1.0)
        tracker.finish(0, {})
    assert tracker.episode[0] == -1 and not tracker.done()  # budget spent, but episode 1 still runs
    for _ in range(50):
        tracker.add(1, 1.0)
    tracker.finish(1, {"true_objective": 7.0})
    assert tracker.done()
    by_episode = {r.episode: r for r in tracker.records}
    assert sorted(by_episode) == [0, 1, 2, 3]
    assert (by_episode[1].length, by_episode[1].true_objective) == (50, 7.0)
    assert np.mean([r.length for r in tracker.records]) == (1 + 50 + 1 + 1) / 4


def test_eval_without_experiment_fails_cleanly(tmp_path: Path) -> None:
    register_gym_env("CartPole-v1")
    with captured_log() as logs:
        assert do_eval(eval_cfg("CartPole-v1", tmp_path, "missing")) == 1
    assert "config.json" in logs.text()


@pytest.mark.parametrize("module", ["sample_factory.eval", "sf_examples.eval_gym_env"])
def test_eval_command_writes_one_row_per_episode(tmp_path: Path, module: str) -> None:
    env = gym.make("CartPole-v1")
    fake_experiment(tmp_path, "cp", "CartPole-v1", env.observation_space, env.action_space)
    args = ["--env=CartPole-v1", f"--train_dir={tmp_path}", "--experiment=cp", "--max_num_episodes=7"]
    result = run_module(module, args, timeout=60)
    assert result.returncode == 0, result.explain()
    assert sorted(int(r["episode"]) for r in _rows(tmp_path, "cp")) == list(range(7))


def test_eval_command_bad_registration_func_fails_in_one_line(tmp_path: Path) -> None:
    args = ["--env=my_env_v0", "--registration_func=my_envs.register", f"--train_dir={tmp_path}", "--experiment=x"]
    result = run_module("sample_factory.eval", args, timeout=60)
    assert result.returncode == 1, result.explain()
    errors = [line for line in result.output.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "--registration_func=my_envs.register must look like module:function" in errors[0]
    assert "Traceback" not in result.output


def test_eval_command_unknown_env_fails_with_suggestion(tmp_path: Path) -> None:
    result = run_module("sample_factory.eval", ["--env=CartPol-v1", f"--train_dir={tmp_path}", "--experiment=x"])
    assert result.returncode == 1, result.explain()
    assert "Did you mean: CartPole-v1" in result.output and "Traceback" not in result.output


def test_eval_refuses_push_to_hub(tmp_path: Path) -> None:
    register_gym_env("CartPole-v1")
    env = gym.make("CartPole-v1")
    fake_experiment(tmp_path, "cp", "CartPole-v1", env.observation_space, env.action_space)
    with captured_log() as logs:
        assert do_eval(eval_cfg("CartPole-v1", tmp_path, "cp", "--push_to_hub")) == 1
    assert "--push_to_hub: uploading to the Hugging Face Hub is not available" in logs.text()
    assert not (tmp_path / "cp" / EVAL_RESULTS_FILE).exists()


@pytest.mark.parametrize(
    ("flags", "warning"),
    [
        (
            ("--save_video", "--fps=10"),
            "--save_video, --fps: no effect in sample_factory.eval (it never renders or records, and steps envs at "
            "the training frameskip); use the enjoy script instead, e.g. python -m sf_examples.enjoy_gym_env",
        ),
        (("--video_name=x.mp4", "--enjoy_script=my_pkg.enjoy_it"), "--video_name: no effect in sample_factory.eval"),
        (("--video_name=x.mp4", "--enjoy_script=my_pkg.enjoy_it"), "e.g. python -m my_pkg.enjoy_it --env=CartPole-v1"),
        (("--no_render", "--video_frames=5", "--eval_env_frameskip=1"), "--video_frames, --no_render, --eval_env"),
        (("--hf_repository=me/cartpole",), "--hf_repository only takes effect with --push_to_hub"),
    ],
)
def test_eval_names_the_flags_it_ignores(tmp_path: Path, flags: tuple[str, ...], warning: str) -> None:
    register_gym_env("CartPole-v1")
    env = gym.make("CartPole-v1")
    fake_experiment(tmp_path, "cp", "CartPole-v1", env.observation_space, env.action_space)
    with captured_log() as logs:
        assert do_eval(eval_cfg("CartPole-v1", tmp_path, "cp", "--max_num_episodes=2", *flags)) == 0
    assert warning in logs.text()


def test_eval_without_enjoy_flags_warns_about_none(tmp_path: Path) -> None:
    register_gym_env("CartPole-v1")
    env = gym.make("CartPole-v1")
    fake_experiment(tmp_path, "cp", "CartPole-v1", env.observation_space, env.action_space)
    with captured_log() as logs:
        assert do_eval(eval_cfg("CartPole-v1", tmp_path, "cp", "--max_num_episodes=2")) == 0
    assert "no effect" not in logs.text()
