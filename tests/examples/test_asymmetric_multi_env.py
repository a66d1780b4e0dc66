"""The asymmetric example: a pursuer (continuous actions, 4 observations) and an evader (discrete actions, 6
observations), each trained by its own policy with its own model, buffers and learner; enjoy and eval use both."""

from __future__ import annotations

import csv
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import sf_run
import torch
from example_helpers import assert_trained, run_module, train_args

from sample_factory.envs.env_info import extract_env_info
from sf_examples.train_asymmetric_multi_env import PursuitEvasionEnv, parse_pursuit_args

TRAIN = "sf_examples.train_asymmetric_multi_env"
ENJOY = "sf_examples.enjoy_asymmetric_multi_env"
EXPERIMENT = "pursuit_serial"


def test_env_declares_one_space_per_agent() -> None:
    env = PursuitEvasionEnv()
    info = extract_env_info(env, parse_pursuit_args(["--experiment=x"]))
    assert info.heterogeneous and info.space_groups() == [0, 1]
    assert info.agent_spaces(0) == (env.observation_spaces[0], env.action_spaces[0])
    assert isinstance(info.agent_spaces(1)[1], gym.spaces.Discrete)
    obs, _ = env.reset(seed=1)
    assert [o.shape for o in obs] == [(4,), (6,)]
    obs, rewards, terminated, truncated, infos = env.step([np.array([1.0, 0.0], np.float32), 3])
    assert len(rewards) == 2 and truncated == [False, False]


def test_rewards_follow_the_distances() -> None:
    """The pursuer is paid for closeness to the evader, the evader for closeness to its goal (and tagged nearby)."""
    env = PursuitEvasionEnv()
    env.reset(seed=0)
    env.positions[:] = np.array([[0.0, 0.0], [0.1, 0.0]], np.float32)
    env.goal[:] = np.array([0.5, 0.0], np.float32)
    _, rewards, _, _, _ = env.step([np.zeros(2, np.float32), 0])  # nobody moves
    assert rewards[0] == pytest.approx(-0.1 * 0.1)
    assert rewards[1] == pytest.approx(-0.1 * 0.4 - 0.05), "within tag radius: the evader pays the tag penalty"


def test_too_few_policies_for_the_kinds_of_agents_is_refused(tmp_path: Path) -> None:
    result = run_module(TRAIN, *train_args(tmp_path, "one_policy", "--num_policies=1", "--serial_mode=True"))
    assert result.returncode != 0
    assert "--num_policies=2" in result.output, result.explain()


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    train_dir = tmp_path_factory.mktemp("asymmetric")
    args = train_args(train_dir, EXPERIMENT, "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=4")
    assert_trained(run_module(TRAIN, *args, "--eval_every_env_steps=2000", "--eval_episodes=4"), policies=(0, 1))
    return train_dir


def _checkpoint(train_dir: Path, experiment: str, policy: int) -> dict:
    path = sorted((train_dir / experiment / f"checkpoint_p{policy}").glob("checkpoint_*.pth"))[-1]
    return torch.load(path, map_location="cpu", weights_only=False)


def _first_layer_width(state: dict) -> int:
    weights = [v for k, v in state["model"].items() if k.endswith("weight") and v.dim() == 2]
    return int(weights[0].shape[1])


def test_serial_training_gives_each_policy_a_model_for_its_spaces(trained_dir: Path) -> None:
    pursuer, evader = (_checkpoint(trained_dir, EXPERIMENT, p) for p in (0, 1))
    assert _first_layer_width(pursuer) == 4 and _first_layer_width(evader) == 6
    heads = [{k: tuple(v.shape) for k, v in c["model"].items() if "action" in k} for c in (pursuer, evader)]
    assert heads[0] != heads[1], f"a Gaussian head for 2 actions and a categorical one for 5 differ: {heads}"


def test_parallel_training_trains_both_policies(tmp_path: Path) -> None:
    args = train_args(tmp_path, "pursuit_parallel", "--num_workers=2", "--num_envs_per_worker=2")
    collected = assert_trained(run_module(TRAIN, *args), policies=(0, 1))
    assert collected[0] == collected[1], "both agents of every env step together"


def test_enjoy_plays_both_kinds_of_agents(trained_dir: Path) -> None:
    args = [f"--train_dir={trained_dir}", f"--experiment={EXPERIMENT}", "--no_render", "--max_num_episodes=2"]
    result = run_module(ENJOY, *args)
    assert result.returncode == 0, result.explain()
    assert "Policy 0 acts for agents [0]" in result.output and "Policy 1 acts for agents [1]" in result.output
    assert "agent=0" in result.output and "agent=1" in result.output


def test_eval_writes_both_agents_episodes(trained_dir: Path) -> None:
    code = (
        "from sf_examples.train_asymmetric_multi_env import register_pursuit_components, parse_pursuit_args\n"
        "from sample_factory.eval import do_eval\n"
        "register_pursuit_components()\n"
        f"raise SystemExit(do_eval(parse_pursuit_args(['--train_dir={trained_dir}', '--experiment={EXPERIMENT}', "
        "'--max_num_episodes=6'], evaluation=True)))\n"
    )
    result = sf_run.run_python(["-c", code], 120)
    assert result.returncode == 0, result.explain()
    with open(trained_dir / EXPERIMENT / "eval_results.csv") as f:
        agents = {row["agent"] for row in csv.DictReader(f)}
    assert agents == {"0", "1"}


def test_the_evaluator_reports_each_policy_on_its_own_agents(trained_dir: Path) -> None:
    log = (trained_dir / EXPERIMENT / "sf_log.txt").read_text()
    assert "Evaluation of policy 0" in log and "Evaluation of policy 1" in log
