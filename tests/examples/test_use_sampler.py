"""The sampler runs without a learner and hands every trajectory to the user's callback."""

from __future__ import annotations

import pytest
from sf_run import run_module


@pytest.mark.parametrize("serial", [True, False], ids=["serial", "parallel"])
def test_sampler_feeds_callback(tmp_path, serial: bool):
    result = run_module(
        "sf_examples.sampler.use_sampler",
        [
            "--env=CartPole-v1",
            "--device=cpu",
            "--num_workers=2",
            "--num_envs_per_worker=2",
            "--rollout=16",
            f"--train_dir={tmp_path}",
            "--experiment=smp",
            "--train_for_env_steps=4000",
            f"--serial_mode={serial}",
        ],
    )
    assert result.returncode == 0, result.output[-3000:]
    rows = (tmp_path / "smp" / "trajectories.csv").read_text().splitlines()
    steps = sum(int(row.split(",")[1]) for row in rows)
    assert steps >= 4000 and all(row.startswith("0,16,") for row in rows)
    assert "Learner" not in result.output  # no learner process took part
    assert not list((tmp_path / "smp").glob("checkpoint_p0/*.pth"))
