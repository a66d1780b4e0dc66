"""End to end: a Brax task trains through the batched sampler in serial mode, enjoy replays the checkpoint and
records a video; without jax/brax the modules still import and the scripts stop with one line naming the fix.

Default suite: the tiny runs below (each compiles Brax's inverted pendulum once; the session shares a jax
compilation cache). ``-m slow``: the return rises on a short budget.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from brax_marks import needs_brax
from sf_run import RunResult, run_module, run_python

TRAIN = "sf_examples.brax.train_brax"
ENJOY = "sf_examples.brax.enjoy_brax"
ENV = "inverted_pendulum"


def train_args(train_dir: Path, *extra: str, steps: int = 2048, agents: int = 16) -> list[str]:
    return [
        f"--env={ENV}",
        f"--train_dir={train_dir}",
        "--experiment=pendulum",
        f"--train_for_env_steps={steps}",
        f"--env_agents={agents}",
        "--rollout=32",
        f"--batch_size={agents * 16}",
        "--num_epochs=2",
        "--device=cpu",
        "--seed=1",
        *extra,
    ]


def _one_error_line(result: RunResult) -> str:
    assert result.returncode == 1, result.explain()
    assert "Traceback" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.output
    return errors[0]


@needs_brax
def test_train_then_enjoy_with_a_video(tmp_path: Path) -> None:
    result = run_module(TRAIN, train_args(tmp_path), timeout=300)
    result.assert_trained(2048)
    assert result.last_reward() is not None, "pendulum episodes end within a few steps at first"
    config = json.loads((tmp_path / "pendulum" / "config.json").read_text())
    assert config["env_agents"] == 16 and config["batched_sampling"] and config["serial_mode"]
    assert list((tmp_path / "pendulum" / "checkpoint_p0").glob("checkpoint_*.pth"))

    watched = run_module(ENJOY, [f"--env={ENV}", f"--train_dir={tmp_path}", "--experiment=pendulum", "--no_render",
                                 "--max_num_episodes=20", "--save_video", "--video_name=replay.mp4",
                                 "--brax_render_res=64", "--device=cpu"], timeout=300)  # fmt: skip
    assert watched.returncode == 0, watched.explain()
    assert watched.output.count("Episode finished") >= 20, watched.explain()
    mp4 = tmp_path / "pendulum" / "replay.mp4"
    assert mp4.exists() and mp4.stat().st_size > 1000, watched.explain()


@needs_brax
def test_an_unknown_task_is_one_error_line(tmp_path: Path) -> None:
    line = _one_error_line(run_module(TRAIN, train_args(tmp_path, "--env=antt"), timeout=120))
    assert "antt" in line and "ant" in line


def test_without_jax_and_brax_the_modules_import_and_the_scripts_name_the_fix() -> None:
    code = (
        "import runpy, sys; sys.modules['brax'] = None; sys.modules['jax'] = None; "
        "import sf_examples.brax.train_brax, sf_examples.brax.enjoy_brax, sf_examples.brax.brax_render; "
        "import sf_examples.brax.experiments.brax_basic_envs; "
        "sys.argv = ['train', '--env=ant', '--experiment=x', '--train_dir=/nonexistent/never']; "
        f"sys.exit(runpy.run_module('{TRAIN}', run_name='__main__'))"
    )
    line = _one_error_line(run_python(["-c", code], timeout=120))
    assert "'jax'" in line and "'brax'" in line and 'pip install "sample-factory[brax]"' in line


def test_help_lists_the_brax_flags() -> None:
    result = run_module(TRAIN, ["--help"], timeout=120)
    assert result.returncode == 0, result.explain()
    for flag in ("--env_agents", "--brax_episode_length", "--brax_backend", "--clamp_actions", "--clamp_rew_obs",
                 "--brax_render_res"):  # fmt: skip
        assert flag in result.output


def random_policy_return(episode_length: int = 200, copies: int = 32, steps: int = 200) -> float:
    """Mean return of finished episodes under Gaussian actions (std 1, as the untrained policy samples them)."""
    import numpy as np

    from sample_factory.utils.attr_dict import AttrDict
    from sf_examples.brax.train_brax import make_brax_env

    env = make_brax_env(ENV, AttrDict(env_agents=copies, brax_episode_length=episode_length, seed=3))
    rng = np.random.default_rng(0)
    env.reset()
    running, finished = np.zeros(copies), []
    for _ in range(steps):
        _, rewards, terminated, truncated, _ = env.step(rng.normal(size=(copies, 1)).astype(np.float32))
        running += rewards.numpy()
        done = (terminated | truncated).numpy()
        finished.extend(running[done].tolist())
        running[done] = 0.0
    return float(np.mean(finished))


@pytest.mark.slow
@needs_brax
def test_return_rises_on_a_short_budget(tmp_path: Path) -> None:
    """From the untrained policy's few steps per episode to balancing most of the 200 steps within 150k steps."""
    start = random_policy_return()
    assert start < 20, "the pendulum falls within a few steps under random actions"
    args = train_args(tmp_path, "--brax_episode_length=200", steps=150_000, agents=32)
    result = run_module(TRAIN, args, timeout=600)
    result.assert_trained(150_000)
    rewards = [float(r) for r in re.findall(r"Avg episode reward: \[\(0, '(-?[0-9.]+)'\)", result.output)]
    assert rewards, result.explain()
    assert rewards[-1] > max(100.0, 5 * start), f"random policy {start:.1f}, then {rewards}"


def test_enjoy_ends_with_one_error_when_frames_cannot_be_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    from sample_factory.utils.misc import ExperimentStatus
    from sf_examples.brax import enjoy_brax
    from sf_examples.brax.brax_render import BraxRenderError

    def no_window(cfg):
        raise BraxRenderError("Cannot open a window to show Brax frames")

    monkeypatch.setattr(enjoy_brax, "enjoy_status", no_window)
    assert enjoy_brax.enjoy_brax(None) == ExperimentStatus.FAILURE
