"""The random-policy sampler: positive FPS for Gymnasium ids and example envs, clean failure for unknown envs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from example_helpers import run_module

from sf_examples.gym.gym_utils import GYM_DEFAULTS
from sf_examples.sampler.random_policy_throughput import parse_throughput_args

# a module outside every example family that registers an env, for --registration_func
_REGISTRATION_MODULE = """
import gymnasium as gym

from sample_factory.envs.env_utils import register_env


def make_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    return gym.make("CartPole-v1")


def register():
    register_env("cartpole_by_func", make_env)
"""

TOOL = "sf_examples.sampler.random_policy_throughput"
_FPS_RE = re.compile(r"Sampling throughput FPS: ([\d.]+)")


def _fps(output: str) -> float:
    match = _FPS_RE.search(output)
    assert match, f"no FPS line in:\n{output[-3000:]}"
    return float(match.group(1))


def test_gymnasium_env_with_two_workers() -> None:
    result = run_module(TOOL, "--env=CartPole-v1", "--num_workers=2", "--num_envs_per_worker=2", "--seconds=1")
    assert result.returncode == 0, result.explain()
    assert _fps(result.output) > 0
    assert "2 workers x 2 envs" in result.output


def test_frameskip_counts_frames_per_agent_step() -> None:
    args = ("--env=batched_cartpole", "--batched_envs=8", "--num_workers=1", "--num_envs_per_worker=1")
    result = run_module(TOOL, *args, "--seconds=1", "--env_frameskip=4")
    assert result.returncode == 0, result.explain()
    frames, agent_steps = map(int, re.search(r"(\d+) frames \((\d+) agent steps\)", result.output).groups())
    assert agent_steps > 0 and frames == 4 * agent_steps
    assert _fps(result.output) > 0


def test_unknown_env_fails_with_suggestion() -> None:
    result = run_module(TOOL, "--env=CartPol-v1", "--num_workers=1", "--seconds=1")
    assert result.returncode == 1
    assert "Did you mean: CartPole-v1" in result.output


def test_family_flags_and_defaults_apply() -> None:
    cfg = parse_throughput_args(["--env=doom_benchmark"])
    assert cfg.env_frameskip == 4 and cfg.res_w == 128  # VizDoom's default and one of its flags
    assert parse_throughput_args(["--env=doom_benchmark", "--env_frameskip=1"]).env_frameskip == 1


def test_registration_func_skips_gym_defaults() -> None:
    cfg = parse_throughput_args(["--env=cartpole_by_func", "--registration_func=my_envs:register"])
    assert cfg.encoder_mlp_layers != GYM_DEFAULTS["encoder_mlp_layers"]


def test_registration_func_registers_env_outside_families(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_envs.py").write_text(_REGISTRATION_MODULE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    args = ("--env=cartpole_by_func", "--registration_func=my_envs:register", "--num_workers=1", "--seconds=1")
    result = run_module(TOOL, *args)
    assert result.returncode == 0, result.explain()
    assert _fps(result.output) > 0


def test_bad_registration_func_fails_with_the_fix() -> None:
    result = run_module(TOOL, "--env=CartPole-v1", "--registration_func=no_such_module:register", "--seconds=1")
    assert result.returncode == 1
    assert "cannot import module 'no_such_module'" in result.output


def test_the_tool_imports_no_torch() -> None:
    """A random policy needs no model: the tool and each of its worker processes start without torch's ~1.5 s."""
    import subprocess
    import sys

    probe = f"import sys, {TOOL}; print(sorted(m for m in ('torch', 'sample_factory.eval') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
