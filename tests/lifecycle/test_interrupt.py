"""Ctrl+C: the run stops within seconds with INTERRUPTED (2), saves a checkpoint, and a re-run continues from it."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import torch
from lifecycle_helpers import TRAIN, cartpole_args
from sf_run import finish, run_module, shm_entries, start

INTERRUPTED = 2
STOP_LIMIT_S = 20.0


def test_ctrl_c_saves_and_rerun_continues(tmp_path: Path) -> None:
    before, started = shm_entries(), time.monotonic()
    proc = start([sys.executable, "-m", TRAIN, *cartpole_args(tmp_path, "intr", 10**9)])
    seen = []
    for line in proc.stdout:  # interrupt once training really runs
        seen.append(line)
        if "Fps is" in line and "Total num frames: 0." not in line:
            break
    assert seen and "Fps is" in seen[-1], "".join(seen)[-3000:]
    interrupted_at = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    result = finish(proc, started, timeout=60, shm_before=before)
    assert time.monotonic() - interrupted_at < STOP_LIMIT_S
    assert result.returncode == INTERRUPTED, result.output[-3000:]
    assert not (tmp_path / "intr" / "done").exists()  # interrupted, not finished

    checkpoints = sorted((tmp_path / "intr" / "checkpoint_p0").glob("checkpoint_*.pth"))
    assert checkpoints
    saved = torch.load(checkpoints[-1], weights_only=True)
    assert saved["env_steps"] > 0

    # serial mode only to start faster: the checkpoint does not depend on the runner
    rerun = run_module(TRAIN, cartpole_args(tmp_path, "intr", saved["env_steps"] + 4096, "--serial_mode=True"))
    assert rerun.returncode == 0, rerun.output[-3000:]
    assert f"resumed at train step {saved['train_step']}, env steps {saved['env_steps']}" in rerun.output
    assert 0 < rerun.collected()[0] < saved["env_steps"] + 4096  # only the remaining steps, not a fresh start
