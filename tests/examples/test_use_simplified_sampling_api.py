"""SyncSamplingAPI end to end: a user script pulls trajectories in its own loop, then stops everything cleanly."""

from __future__ import annotations

import re

import pytest
from sf_run import run_module

_RESULT_RE = re.compile(r"Collected (\d+) samples in ([0-9.]+) s: sampling throughput ([0-9.]+) SPS")


@pytest.mark.parametrize("serial", [True, False], ids=["serial", "parallel"])
def test_script_collects_the_requested_samples_and_leaves_nothing_behind(tmp_path, serial: bool):
    result = run_module(
        "sf_examples.sampler.use_simplified_sampling_api",
        [
            "--env=CartPole-v1",
            "--device=cpu",
            "--num_workers=2",
            "--num_envs_per_worker=2",
            "--rollout=16",
            f"--train_dir={tmp_path}",
            "--experiment=api",
            "--sample_env_steps=3000",
            f"--serial_mode={serial}",
        ],
    )  # run_module asserts that no process and no /dev/shm entry outlived the script
    assert result.returncode == 0, result.explain()
    found = _RESULT_RE.search(result.output)
    assert found, result.explain()
    samples, seconds, throughput = int(found[1]), float(found[2]), float(found[3])
    # whole trajectories of 16 steps arrive, so the count overshoots the target by less than one round of them
    assert 3000 <= samples < 3000 + 4 * 16 * 2 and samples % 16 == 0
    assert seconds > 0 and throughput == pytest.approx(samples / seconds, rel=0.05)
    assert "Learner" not in result.output  # no learner took part
    assert not list((tmp_path / "api").glob("checkpoint_p0/*.pth"))
