"""End to end: the PettingZoo family trains (parallel runner, one worker), enjoy writes an MP4, eval a CSV.

Default suite: the default env (no ``--env`` flag) trained once and shared by the enjoy/eval/help tests. The two
image envs are slower to simulate and run under ``-m slow``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from sf_run import RunResult, run_module

pytest.importorskip("pettingzoo")

TRAIN = "sf_examples.train_pettingzoo_env"
ENJOY = "sf_examples.enjoy_pettingzoo_env"
EXPERIMENT = "kaz"


def train_args(train_dir: Path, experiment: str, *extra: str, steps: int = 3000) -> list[str]:
    return [
        f"--train_dir={train_dir}",
        f"--experiment={experiment}",
        f"--train_for_env_steps={steps}",
        "--num_workers=1",
        "--device=cpu",
        "--decorrelate_experience_max_seconds=0",
        "--batch_size=512",
        "--rollout=16",
        "--pettingzoo_max_cycles=60",  # short episodes, so episode stats appear within a few thousand steps
        *extra,
    ]


def assert_trained(result: RunResult, min_samples: int = 2000) -> None:
    assert result.returncode == 0, result.explain()
    assert result.collected().get(0, 0) >= min_samples, result.explain()
    assert result.last_reward() is not None, f"no episode finished\n{result.explain()}"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default env (knights_archers_zombies_v11), chosen without --env, parallel runner."""
    train_dir = tmp_path_factory.mktemp("pettingzoo")
    assert_trained(run_module(TRAIN, train_args(train_dir, EXPERIMENT), timeout=180))
    return train_dir


def test_default_env_needs_no_env_flag(trained: Path) -> None:
    config = (trained / EXPERIMENT / "config.json").read_text()
    assert '"env": "knights_archers_zombies_v11"' in config


def test_enjoy_writes_mp4(trained: Path) -> None:
    args = [f"--train_dir={trained}", f"--experiment={EXPERIMENT}", "--save_video", "--no_render", "--device=cpu"]
    result = run_module(ENJOY, [*args, "--video_frames=30", "--video_name=kaz.mp4"], timeout=120)
    assert result.returncode == 0, result.explain()
    assert (trained / EXPERIMENT / "kaz.mp4").stat().st_size > 1000


def test_eval_writes_csv(trained: Path) -> None:
    """The generic tool finds the family by env name and applies its flags (``--pettingzoo_max_cycles``)."""
    args = ["--env=knights_archers_zombies_v11", f"--train_dir={trained}", f"--experiment={EXPERIMENT}"]
    result = run_module("sample_factory.eval", [*args, "--max_num_episodes=8", "--device=cpu"], timeout=120)
    assert result.returncode == 0, result.explain()
    with open(trained / EXPERIMENT / "eval_results.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and {row["agent"] for row in rows} <= {"0", "1", "2", "3"}
    assert all(0 < int(row["length"]) <= 60 for row in rows)


def test_help_shows_family_flags() -> None:
    result = run_module(TRAIN, ["--help"], timeout=60)
    assert result.returncode == 0, result.explain()
    assert "--pettingzoo_max_cycles" in result.output and "--pettingzoo_img_size" in result.output
    assert re.search(r"--env ENV.*?\(default:\s+knights_archers_zombies_v11\)", result.output, re.S)


def test_unknown_env_fails_naming_the_family_envs() -> None:
    result = run_module(TRAIN, ["--env=pistonbal_v6", "--experiment=x", "--device=cpu"], timeout=60)
    assert result.returncode == 1 and "pistonball_v6" in result.output


def test_agents_of_different_spaces_train_a_policy_each(tmp_path: Path) -> None:
    """``predator_prey_v0``: a continuous predator (4 observations) and a discrete prey (6), through the adapter."""
    args = train_args(tmp_path, "predator_prey", "--env=predator_prey_v0", steps=4000)
    result = run_module(TRAIN, args, timeout=180)
    assert result.returncode == 0, result.explain()
    assert "Agents have 2 kinds of spaces: policies [[0], [1]] act for agents [[0], [1]]" in result.output
    collected = result.collected()
    assert collected.get(0, 0) >= 2000 and collected.get(1, 0) >= 2000, result.explain()
    result = run_module("sample_factory.eval", [
        "--env=predator_prey_v0", f"--train_dir={tmp_path}", "--experiment=predator_prey", "--max_num_episodes=4",
        "--device=cpu",
    ], timeout=120)  # fmt: skip
    assert result.returncode == 0 and "Policy 1 acts for agents [1]" in result.output, result.explain()


@pytest.mark.slow
@pytest.mark.parametrize("env", ["pistonball_v6", "cooperative_pong_v6"])
def test_image_envs_train(tmp_path: Path, env: str) -> None:
    extra = ["--num_envs_per_worker=1", "--worker_num_splits=1"]
    assert_trained(run_module(TRAIN, train_args(tmp_path, env, f"--env={env}", *extra, steps=2000), timeout=300))


@pytest.mark.slow
def test_random_policy_throughput() -> None:
    args = ["--env=pistonball_v6", "--num_workers=1", "--num_envs_per_worker=1", "--seconds=2"]
    result = run_module("sf_examples.sampler.random_policy_throughput", args, timeout=120)
    assert result.returncode == 0, result.explain()
    agent_steps = int(re.search(r"\((\d+) agent steps\)", result.output).group(1))
    assert agent_steps > 0 and agent_steps % 20 == 0, "pistonball steps its 20 pistons together"
