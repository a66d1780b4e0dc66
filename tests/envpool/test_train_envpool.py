"""End to end: EnvPool envs train through the batched sampler (parallel runner, one worker), enjoy writes an MP4,
eval writes its CSV; without envpool the scripts fail at once with one line naming it.

Default suite: the missing-envpool check and ``--help`` (the wrapper's unit tests are in test_envpool_wrappers.py).
Every listed env, the videos, eval and the throughput tool run under ``-m slow``.
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest
from sf_run import RunResult, run_module, run_python

from sf_examples.envpool.atari.envpool_atari_params import ENVPOOL_ATARI_ENVS, STANDARD_GAMES
from sf_examples.envpool.mujoco.envpool_mujoco_params import ENVPOOL_MUJOCO_ENVS

ATARI = "sf_examples.envpool.atari"
MUJOCO = "sf_examples.envpool.mujoco"
needs_envpool = pytest.mark.skipif(importlib.util.find_spec("envpool") is None, reason="envpool is not installed")


def train_args(train_dir: Path, env: str, *extra: str, steps: int = 3000) -> list[str]:
    return [
        f"--env={env}",
        f"--train_dir={train_dir}",
        f"--experiment={env}",
        f"--train_for_env_steps={steps}",
        "--num_workers=1",
        "--env_agents=8",
        "--envpool_num_threads=1",
        "--device=cpu",
        "--decorrelate_experience_max_seconds=0",
        "--rollout=16",
        "--batch_size=128",
        "--num_epochs=1",
        "--num_batches_per_epoch=1",
        *extra,
    ]


def assert_trained(result: RunResult, min_samples: int) -> None:
    assert result.returncode == 0, result.explain()
    assert result.collected().get(0, 0) >= min_samples, result.explain()


def _train(tmp_path: Path, family: str, env: str, steps: int = 3000) -> RunResult:
    module = f"{family}.train_envpool_{family.rsplit('.', 1)[1]}"
    return run_module(module, train_args(tmp_path, env, steps=steps), timeout=240)


@pytest.mark.slow
@needs_envpool
def test_mujoco_trains_batched(tmp_path: Path) -> None:
    result = _train(tmp_path, MUJOCO, "envpool_mujoco_pendulum")
    assert_trained(result, 3000)
    assert result.last_reward() is not None, "pendulum episodes end within a few steps under a random policy"
    config = (tmp_path / "envpool_mujoco_pendulum" / "config.json").read_text()
    assert '"batched_sampling": true' in config and '"num_envs_per_worker": 1' in config


def test_missing_envpool_fails_before_any_process_starts() -> None:
    code = (
        "import runpy, sys; sys.modules['envpool'] = None; "
        "sys.argv = ['train', '--env=atari_breakout', '--experiment=x', '--train_dir=/nonexistent/never']; "
        f"sys.exit(runpy.run_module('{ATARI}.train_envpool_atari', run_name='__main__'))"
    )
    result = run_python(["-c", code], timeout=60)
    assert result.returncode == 1, result.explain()
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if "ERROR" in line or "error" in line.lower()]
    assert len(errors) == 1 and "'envpool'" in errors[0] and "sample-factory[envpool]" in errors[0], result.output


def test_help_works_and_lists_family_flags() -> None:
    result = run_module(f"{ATARI}.train_envpool_atari", ["--help"], timeout=60)
    assert result.returncode == 0, result.explain()
    assert "--env_agents" in result.output and "--envpool_num_threads" in result.output


@pytest.mark.slow
@needs_envpool
@pytest.mark.parametrize("game", STANDARD_GAMES)
def test_standard_atari_games_train(tmp_path: Path, game: str) -> None:
    assert_trained(_train(tmp_path, ATARI, f"envpool_atari_{game}", steps=8000), 8000)


@pytest.mark.slow
@needs_envpool
@pytest.mark.parametrize("env", sorted(set(ENVPOOL_MUJOCO_ENVS) - {"envpool_mujoco_pendulum"}))
def test_every_mujoco_task_trains(tmp_path: Path, env: str) -> None:
    assert_trained(_train(tmp_path, MUJOCO, env), 3000)


@pytest.mark.slow
@needs_envpool
def test_all_57_games_step() -> None:
    """Every game of the table exists in EnvPool and steps (training each is what the standard games test)."""
    from sample_factory.envs.create_env import create_env
    from sample_factory.utils.attr_dict import AttrDict
    from sf_examples.envpool.atari.train_envpool_atari import register_envpool_atari_envs

    register_envpool_atari_envs()
    cfg = AttrDict(env_agents=2, envpool_num_threads=1, seed=0)
    for env_name in ENVPOOL_ATARI_ENVS:
        env = create_env(env_name, cfg=cfg)
        try:
            obs, _ = env.reset()
            obs, *_ = env.step([0, 0])
            assert obs.shape == (2, 4, 84, 84), env_name
        finally:
            env.close()


@pytest.mark.slow
@needs_envpool
@pytest.mark.parametrize(("family", "env"), [(ATARI, "envpool_atari_pong"), (MUJOCO, "envpool_mujoco_hopper")])
def test_enjoy_video_and_eval_csv(tmp_path: Path, family: str, env: str) -> None:
    assert _train(tmp_path, family, env, steps=2000).returncode == 0
    enjoy = f"{family}.enjoy_envpool_{family.rsplit('.', 1)[1]}"
    common = [f"--env={env}", f"--train_dir={tmp_path}", f"--experiment={env}", "--device=cpu"]
    result = run_module(enjoy, [*common, "--save_video", "--no_render", "--video_frames=40", "--video_name=v.mp4"])
    assert result.returncode == 0, result.explain()
    assert (tmp_path / env / "v.mp4").stat().st_size > 1000
    result = run_module("sample_factory.eval", [*common, "--max_num_episodes=4", "--max_num_frames=200000"])
    assert result.returncode == 0, result.explain()
    with open(tmp_path / env / "eval_results.csv") as f:
        assert len(list(csv.DictReader(f))) == 4


@pytest.mark.slow
@needs_envpool
def test_random_policy_throughput_counts_every_env_of_the_pool() -> None:
    args = ["--env=envpool_atari_breakout", "--num_workers=1", "--env_agents=4", "--seconds=2"]
    result = run_module("sf_examples.sampler.random_policy_throughput", args, timeout=120)
    assert result.returncode == 0, result.explain()
    assert "Sampling throughput FPS" in result.output
