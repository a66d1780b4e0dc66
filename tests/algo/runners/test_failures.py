"""A failing env ends the run with FAILURE in seconds; Ctrl+C ends it with INTERRUPTED and a checkpoint."""

from __future__ import annotations

import glob
import os
import signal
import sys
import time

import pytest
from sf_run import finish, run_module, run_script, shm_entries, start_until

HERE = os.path.dirname(os.path.abspath(__file__))
FAILURE, INTERRUPTED = 1, 2


@pytest.mark.parametrize("serial", [False, True], ids=["parallel", "serial"])
def test_env_exception_fails_run_quickly(tmp_path, serial: bool):
    result = run_script(
        os.path.join(HERE, "failing_env_train.py"),
        [
            "--env=exploding_cartpole",
            "--device=cpu",
            "--num_workers=2",
            "--num_envs_per_worker=2",
            f"--train_dir={tmp_path}",
            "--experiment=boom",
            f"--serial_mode={serial}",
            "--env_error_behavior=fail",
        ],
        timeout=90,
    )
    assert result.returncode == FAILURE, result.output[-3000:]
    assert "the simulator exploded on purpose" in result.output  # the env's traceback is reported
    assert "rollout_w1" in result.output
    assert result.seconds < 60


def test_env_that_never_finishes_its_reset_fails_the_run(tmp_path):
    result = run_script(
        os.path.join(HERE, "failing_env_train.py"),
        [
            "--env=hanging_cartpole",
            "--device=cpu",
            "--num_workers=2",
            "--num_envs_per_worker=2",
            "--reset_timeout_seconds=3",
            f"--train_dir={tmp_path}",
            "--experiment=hang",
        ],
        timeout=120,
    )
    assert result.returncode == FAILURE, result.explain()
    assert "--reset_timeout_seconds=3" in result.output and "rollout_w1" in result.output
    assert "rollout_w0" not in result.output.split("Not ready after")[1].split("\n")[0]  # only the stuck one
    # the stuck process is killed at once: the stop and join timeouts are not waited out
    assert "Process rollout_w1 was killed: its envs were not ready" in result.output
    assert "did not stop within" not in result.output and "did not exit in time" not in result.output
    assert result.seconds < 60


def test_bad_config_fails_before_starting(tmp_path):
    result = run_module(
        "sf_examples.train_gym_env",
        [
            "--env=CartPole-v1",
            "--num_envs_per_worker=3",
            "--worker_num_splits=2",
            "--experiment=x",
            f"--train_dir={tmp_path}",
        ],
        timeout=60,
    )
    assert result.returncode != 0
    assert "num_envs_per_worker" in result.output
    assert "Started" not in result.output and not (tmp_path / "x").exists()


def test_unknown_env_lists_registered_names(tmp_path):
    result = run_module("sf_examples.train_gym_env", ["--env=CartPol-v1", f"--train_dir={tmp_path}"], timeout=60)
    assert result.returncode != 0
    assert "CartPole-v1" in result.output  # the close match is suggested


def _train_until_running(tmp_path, experiment: str):
    """Start a parallel CartPole run; return once it prints its first status line (training really runs)."""
    cmd = [
        sys.executable, "-m", "sf_examples.train_gym_env", "--env=CartPole-v1", "--device=cpu", "--num_workers=2",
        "--num_envs_per_worker=4", f"--train_dir={tmp_path}", f"--experiment={experiment}",
    ]  # fmt: skip
    proc, seen = start_until(cmd, "Fps is")
    assert any("Fps is" in line for line in seen), "".join(seen)[-3000:]
    return proc


def test_ctrl_c_interrupts_with_checkpoint(tmp_path):
    before = shm_entries()
    started = time.monotonic()
    proc = _train_until_running(tmp_path, "intr")
    interrupted_at = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    result = finish(proc, started, timeout=60, shm_before=before)
    assert time.monotonic() - interrupted_at < 20
    assert result.returncode == INTERRUPTED, result.output[-3000:]
    assert glob.glob(str(tmp_path / "intr" / "checkpoint_p0" / "checkpoint_*.pth"))


def test_killed_runner_leaves_no_orphans(tmp_path):
    """SIGKILL of the runner: each child notices its parent is gone, closes its envs and exits."""
    before = shm_entries()
    started = time.monotonic()
    proc = _train_until_running(tmp_path, "killed")
    os.kill(proc.pid, signal.SIGKILL)
    result = finish(proc, started, timeout=60, shm_before=before)  # asserts the whole session is gone
    assert result.returncode == -signal.SIGKILL


def test_runner_killed_holding_its_inbox_lock_leaves_no_orphans(tmp_path):
    """The runner dies while it holds its inbox's lock (it reads that inbox all the time): every child that sends to
    it blocks inside put, its loop stuck, until the child's orphan guard frees the lock and closes it down."""
    before = shm_entries()
    started = time.monotonic()
    cmd = [
        sys.executable, os.path.join(HERE, "..", "..", "messaging", "queue_poison.py"),
        "--die_holding_inbox_on_usr1", "--env=CartPole-v1", "--device=cpu", "--num_workers=2",
        "--num_envs_per_worker=4", f"--train_dir={tmp_path}", "--experiment=orphans",
    ]  # fmt: skip
    proc, seen = start_until(cmd, "Fps is")
    assert any("Fps is" in line for line in seen), "".join(seen)[-3000:]
    os.kill(proc.pid, signal.SIGUSR1)
    result = finish(proc, started, timeout=60, shm_before=before)  # asserts the whole session is gone
    assert result.returncode == -signal.SIGKILL, result.explain()
    assert "the runner process is gone, closing down" in result.output, result.explain()
    assert "queue repair after the runner's death: the inbox of runner was left locked" in result.output
