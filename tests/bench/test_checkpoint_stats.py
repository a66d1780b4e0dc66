"""Checkpoints of two implementations played with one code (bench/checkpoint_stats.py): GAE, figures, file choice."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

import checkpoint_stats  # noqa: E402
from checkpoint_stats import Episode  # noqa: E402


def test_gae_of_a_terminated_episode_counts_nothing_after_its_end():
    episode = Episode(np.ones(3), np.zeros(3), terminated=True)
    np.testing.assert_allclose(checkpoint_stats.gae(episode, gamma=0.5, gae_lambda=1.0), [1.75, 1.5, 1.0])


def test_gae_of_an_episode_cut_at_the_time_limit_leaves_out_its_last_step():
    episode = Episode(np.ones(3), np.array([0.0, 2.0, 4.0]), terminated=False)
    # deltas: 1 + 0.5 * 2 - 0 = 2, 1 + 0.5 * 4 - 2 = 1; with lambda 0.5: A1 = 1, A0 = 2 + 0.25 * 1
    np.testing.assert_allclose(checkpoint_stats.gae(episode, gamma=0.5, gae_lambda=0.5), [2.25, 1.0])


def test_a_value_head_that_knows_the_returns_leaves_no_advantage_and_explains_everything():
    rewards = np.array([1.0, 2.0, 3.0, 4.0])
    returns = np.array([sum(r * 0.9**k for k, r in enumerate(rewards[t:])) for t in range(4)])
    figures = checkpoint_stats.advantage_figures([Episode(rewards, returns, True)], 0.9, 0.95, tail=0)
    assert figures["adv_std"] == pytest.approx(0.0, abs=1e-9) and figures["expl_var"] == pytest.approx(1.0)


def test_the_tail_of_an_episode_cut_at_the_time_limit_is_left_out():
    # a constant reward and a value head that knows nothing: the GAE sums are all alike except the last ones, which
    # the cut leaves short; they are what makes the advantages spread
    cut = Episode(np.ones(200), np.zeros(200), terminated=False)
    whole = checkpoint_stats.advantage_figures([cut], 0.99, 0.95, tail=0)["adv_std"]
    assert checkpoint_stats.advantage_figures([cut], 0.99, 0.95, tail=60)["adv_std"] < whole / 20
    with pytest.raises(ValueError, match="--tail=300"):
        checkpoint_stats.advantage_figures([cut], 0.99, 0.95, tail=300)


def test_the_regular_checkpoint_nearest_to_the_steps_is_taken(tmp_path):
    folder = tmp_path / "run" / "checkpoint_p0"
    folder.mkdir(parents=True)
    for name in ("checkpoint_000000784_401408.pth", "checkpoint_000000824_421888.pth", "best_000000800_410000_r_1.pth"):
        (folder / name).touch()
    path, steps = checkpoint_stats.nearest_checkpoint(tmp_path / "run", 410_000)
    assert (path.name, steps) == ("checkpoint_000000784_401408.pth", 401_408)
    assert checkpoint_stats.nearest_checkpoint(tmp_path / "run", 430_000)[1] == 421_888
    assert checkpoint_stats.nearest_checkpoint(tmp_path / "empty", 1) is None


def test_checkpoints_are_played_and_tabled_per_run_and_per_group(tmp_path, capsys):
    import torch

    player = checkpoint_stats.Player(checkpoint_stats.TASKS["mujoco_pendulum"], num_envs=2)
    for run, steps in (("a_s1", 4096), ("a_s2", 8192), ("b_s1", 4096)):
        folder = tmp_path / run / "checkpoint_p0"
        folder.mkdir(parents=True)
        torch.save({"model": player.model.state_dict()}, folder / f"checkpoint_000000001_{steps}.pth")
    argv = ["mujoco_pendulum", "--at=4096", "--envs=2", "--repeats=1", "--tail=0"]
    code = checkpoint_stats.main([*argv, "--group", f"a={tmp_path}/a_*", "--group", f"b={tmp_path}/b_*"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [line.split(" | ")[:3] for line in lines[2:5]] == [
        ["| a", "a_s1", "4,096"], ["| a", "a_s2", "8,192"], ["| b", "b_s1", "4,096"]
    ]  # fmt: skip
    assert lines[5].startswith("| **a** | 2 runs |") and lines[6].startswith("| **b** | 1 runs |")
    assert checkpoint_stats.main([*argv, "--group", f"c={tmp_path}/none_*"]) == 2
