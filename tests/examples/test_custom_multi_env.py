"""The custom multi-agent example: the protocol (auto-reset, extra stats), training with one and two policies, enjoy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from example_helpers import assert_trained, run_module, train_args

from sample_factory.algo.utils.context import global_env_registry, reset_global_context
from sf_examples.train_custom_multi_env import (
    LineGoalsMultiEnv,
    make_custom_multi_env_func,
    parse_custom_args,
    register_custom_components,
)

TRAIN = "sf_examples.train_custom_multi_env"
ENJOY = "sf_examples.enjoy_custom_multi_env"
EXPERIMENT = "multi_serial"


# ---- env protocol, in process ----------------------------------------------------------------------------------


def test_env_declares_the_multi_agent_protocol() -> None:
    env = make_custom_multi_env_func("my_custom_multi_env_v1")
    assert env.is_multiagent is True and env.num_agents == 2
    obs, infos = env.reset(seed=3)
    assert len(obs) == 2 and len(infos) == 2
    assert all(o.shape == env.observation_space.shape for o in obs)


def test_sample_factory_2_names_parse_and_register_this_example() -> None:
    """``parse_custom_args`` / ``register_custom_components``: the names SF2's tests and scripts import."""
    cfg = parse_custom_args(argv=["--experiment=x", "--custom_multi_env_num_cells=9"])
    assert cfg.env == "my_custom_multi_env_v1" and cfg.custom_multi_env_num_cells == 9 and cfg.use_rnn is False
    assert parse_custom_args(argv=["--experiment=x"], evaluation=True).train_script == TRAIN
    reset_global_context()
    try:
        register_custom_components()
        assert "my_custom_multi_env_v1" in global_env_registry()
    finally:
        reset_global_context()


def test_finished_agent_is_auto_reset_alone_and_reports_extra_stats() -> None:
    env = LineGoalsMultiEnv(num_cells=7, episode_len=10)
    env.reset(seed=0)
    env.positions, env.goals = np.array([2, 5]), np.array([3, 0])
    env.steps[:] = 4
    obs, rewards, terminated, truncated, infos = env.step([2, 1])  # agent 0 steps onto its goal, agent 1 stays
    assert terminated == [True, False] and truncated == [False, False]
    assert rewards[0] == pytest.approx(1.0) and rewards[1] == pytest.approx(-0.01)
    assert infos[0]["episode_extra_stats"] == {"reached_goal": 1.0, "collisions": 0.0}
    assert infos[1] == {}
    assert env.steps[0] == 0 and env.steps[1] == 5, "only the finished agent starts a new episode"
    assert env.positions[0] != env.goals[0], "the observation returned is the first one of the next episode"
    assert obs[0][env.positions[0]] == 1.0 and obs[0][7 + env.goals[0]] == 1.0


def test_time_limit_truncates_each_agent() -> None:
    env = LineGoalsMultiEnv(num_cells=7, episode_len=2)
    env.reset(seed=0)
    env.positions, env.goals = np.array([0, 6]), np.array([6, 0])
    outcomes = [env.step([1, 1])[3] for _ in range(2)]
    assert outcomes == [[False, False], [True, True]]


# ---- end to end ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    train_dir = tmp_path_factory.mktemp("custom_multi")
    result = run_module(TRAIN, *train_args(train_dir, EXPERIMENT, "--serial_mode=True", "--num_workers=1"))
    assert_trained(result)
    return train_dir


def test_train_serial(trained_dir: Path) -> None:
    assert list((trained_dir / EXPERIMENT / "checkpoint_p0").glob("checkpoint_*.pth"))


def test_train_parallel(tmp_path: Path) -> None:
    args = train_args(tmp_path, "multi_parallel", "--num_workers=2", "--num_envs_per_worker=2")
    assert_trained(run_module(TRAIN, *args))


def test_train_two_policies(tmp_path: Path) -> None:
    args = train_args(tmp_path, "multi_two_policies", "--serial_mode=True", "--num_workers=1", "--num_policies=2")
    assert_trained(run_module(TRAIN, *args), policies=(0, 1))
    for policy in (0, 1):
        assert list((tmp_path / "multi_two_policies" / f"checkpoint_p{policy}").glob("checkpoint_*.pth"))


def test_enjoy_controls_both_agents(trained_dir: Path) -> None:
    result = run_module(
        ENJOY, f"--train_dir={trained_dir}", f"--experiment={EXPERIMENT}", "--no_render", "--max_num_episodes=2"
    )
    assert result.returncode == 0, result.explain()
    assert "Episode finished: reward=" in result.output
    assert "Avg episode reward: " in result.output and "Avg episode length: " in result.output
