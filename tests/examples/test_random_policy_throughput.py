"""The random-policy sampler: positive FPS for Gymnasium ids and example envs, clean failure for unknown envs."""

from __future__ import annotations

import re

from example_helpers import run_module

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
